// observer_test.js — assertions on observer.js against observer_test.html (see page_scripts_test.js for the
// verdict format). Asynchronous: each test returns a promise; the verdict is written when all settled.
/* global __keel */
'use strict';

const failures = [];
let passed = 0;

function check(name, condition, detail) {
  if (condition) {
    ++passed;
  } else {
    failures.push(name + (detail === undefined ? '' : ': ' + JSON.stringify(detail)));
  }
}

const later = (ms, fn) => setTimeout(fn, ms);

const tests = {
  async takeBeforeStartSaysItWasNotObserving() {
    check('not observing', __keel.observeTake({}).observing === false);
  },

  async changesAreSummarizedWithRefsForNewElements() {
    __keel.observeStart();
    const panel = document.createElement('div');
    panel.innerHTML = '<button>Checkout</button><input aria-label="Coupon"><span>text</span>' +
        '<button style="display:none">Hidden</button>';
    document.getElementById('list').appendChild(panel);
    document.getElementById('old').remove();
    document.getElementById('status').firstChild.nodeValue = 'Added to cart';
    document.getElementById('menu').setAttribute('aria-expanded', 'true');
    const flash = document.createElement('button');
    flash.textContent = 'Flash';
    document.body.appendChild(flash);
    flash.remove();  // added and removed within the period: neither
    const taken = __keel.observeTake({ nextIndex: 500 });
    check('observing', taken.observing === true);
    check('added refs', JSON.stringify(taken.added.map((a) => [a.role, a.name])) ===
          JSON.stringify([['button', 'Checkout'], ['textbox', 'Coupon']]), taken.added);
    check('new indices from nextIndex', taken.added.every((a) => a.index >= 500), taken.added);
    check('removed', taken.removed === 1, taken.removed);
    check('text', taken.textChanges === 1, taken.textChanges);
    check('states', taken.stateChanges === 1, taken.stateChanges);
    const again = __keel.observeTake({});
    check('a new period', again.added.length === 0 && again.removed === 0 && again.textChanges === 0, again);
  },

  async barrierResolves() {
    const result = await __keel.barrier();
    check('barrier', result.ok === true);
  },

  async waitForTextSeesTextAppearAndGo() {
    later(200, () => { document.getElementById('status').textContent = 'Order placed'; });
    const appeared = await __keel.waitForText({ text: 'order PLACED', timeoutMs: 5000 });
    check('appeared', appeared.found === true, appeared);
    const already = await __keel.waitForText({ text: 'Order placed' });
    check('already there', already.found === true && already.ms === 0, already);
    later(200, () => { document.getElementById('status').textContent = 'Done'; });
    const gone = await __keel.waitForText({ text: 'Order placed', gone: true, timeoutMs: 5000 });
    check('gone', gone.found === true, gone);
  },

  async waitForTextTimesOut() {
    const missing = await __keel.waitForText({ text: 'never shown', timeoutMs: 300 });
    check('timed out', missing.found === false && missing.ms >= 300, missing);
  },
};

(async () => {
  for (const [name, test] of Object.entries(tests)) {
    try {
      await test();
    } catch (e) {
      failures.push(name + ' threw ' + (e && e.stack ? e.stack : String(e)));
    }
  }
  document.getElementById('verdict').textContent =
    `KEEL-JS-TESTS pass=${passed} fail=${failures.length}\n` + failures.map((f) => 'FAIL ' + f).join('\n');
})();
