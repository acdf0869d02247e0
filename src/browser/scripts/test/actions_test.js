// actions_test.js — assertions on actions.js against actions_test.html (see page_scripts_test.js for the
// verdict format).
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

// The registry index of the element with this accessible name, from a fresh snapshot.
function indexOf(name) {
  const ref = __keel.snapshot({}).refs.find((r) => r.name === name);
  if (!ref) throw new Error('no ref named ' + name);
  return ref.index;
}

const log = [];
const counter = document.getElementById('counter');
for (const type of ['pointerdown', 'mousedown', 'focus', 'pointerup', 'mouseup', 'click']) {
  counter.addEventListener(type, () => log.push(type));
}

const tests = {
  clickDispatchesTheEventsOfAMouseClickInOrder() {
    const result = __keel.click({ index: indexOf('Count') });
    check('ok', result.ok === true && Array.isArray(result.box), result);
    check('order', log.join(',') === 'pointerdown,mousedown,focus,pointerup,mouseup,click', log);
    check('focused', document.activeElement === counter);
  },

  clickFollowsALinkAndTogglesACheckboxThroughItsLabel() {
    check('link', __keel.click({ index: indexOf('Jump') }).ok && location.hash === '#target', location.hash);
    const agree = document.getElementById('agree');
    check('checkbox', __keel.click({ index: indexOf('Agree') }).ok && agree.checked === true);
  },

  clickReachesIntoOpenShadowRoots() {
    let clicks = 0;
    document.getElementById('host').shadowRoot.querySelector('button').addEventListener('click', () => ++clicks);
    const result = __keel.click({ index: indexOf('Shadow button') });
    check('shadow click', result.ok && clicks === 1, result);
  },

  aCoveredElementIsNotClickedAndTheCoverIsNamed() {
    let clicks = 0;
    document.getElementById('covered').addEventListener('click', () => ++clicks);
    const result = __keel.click({ index: indexOf('Covered') });
    check('covered', result.ok === false && result.reason === 'covered', result);
    check('cover named', result.cover && result.cover.role === 'dialog' && result.cover.name === 'Cookie settings',
          result.cover);
    check('not clicked', clicks === 0);
  },

  refusalsNameTheirReason() {
    check('disabled', __keel.click({ index: indexOf('Disabled') }).reason === 'disabled');
    check('unknown index', __keel.click({ index: 999999 }).reason === 'stale');
    const removedIndex = indexOf('Soon removed');
    document.getElementById('removed').remove();
    check('removed element', __keel.click({ index: removedIndex }).reason === 'stale');
    const goneIndex = indexOf('Soon hidden');
    document.getElementById('gone').style.display = 'none';
    check('hidden element', __keel.click({ index: goneIndex }).reason === 'not_visible');
    check('origin', __keel.click({ index: indexOf('Count'), expectOrigin: 'http://elsewhere.example' }).reason === 'origin');
  },

  fillUsesTheNativeSetterAndFiresInputAndChange() {
    const input = document.getElementById('react');
    const proto = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value');
    let instanceSets = 0;
    Object.defineProperty(input, 'value', {  // what React does to track a controlled input
      configurable: true,
      get() { return proto.get.call(this); },
      set(v) { ++instanceSets; proto.set.call(this, v); },
    });
    const seen = [];
    input.addEventListener('input', () => seen.push('input:' + input.value));
    input.addEventListener('change', () => seen.push('change'));
    const result = __keel.fill({ index: indexOf('Controlled'), value: 'typed' });
    check('filled', result.ok && result.value === 'typed', result);
    check('events', seen.join(',') === 'input:typed,change', seen);
    check('instance setter bypassed', instanceSets === 0);
  },

  fillTextareasContentEditableAndSubmits() {
    check('textarea', __keel.fill({ index: indexOf('Notes'), value: 'a note' }).ok &&
          document.getElementById('area').value === 'a note');
    check('contenteditable', __keel.fill({ index: indexOf('Editor'), value: 'new' }).ok &&
          document.getElementById('editor').textContent === 'new');
    let submitted = 0;
    document.getElementById('form').addEventListener('submit', (e) => { e.preventDefault(); ++submitted; });
    check('submit', __keel.fill({ index: indexOf('Notes'), value: 'x', submit: true }).ok && submitted === 1, submitted);
    check('readonly', __keel.fill({ index: indexOf('Fixed'), value: 'y' }).reason === 'not_editable');
    check('checkbox is not text', __keel.fill({ index: indexOf('Agree'), value: 'y' }).reason === 'not_editable');
  },

  selectOptionByLabelOrValue() {
    const select = document.getElementById('size');
    let changes = 0;
    select.addEventListener('change', () => ++changes);
    check('by label', __keel.selectOption({ index: indexOf('Size'), values: ['Medium'] }).ok && select.value === 'm');
    check('by value', __keel.selectOption({ index: indexOf('Size'), values: ['s'] }).ok && select.value === 's');
    const missing = __keel.selectOption({ index: indexOf('Size'), values: ['Huge'] });
    check('no such option lists the options', missing.reason === 'no_such_option' &&
          missing.options.join(',') === 'Small,Medium', missing);
    check('change events', changes === 2, changes);
    check('not a select', __keel.selectOption({ index: indexOf('Count'), values: ['x'] }).reason === 'not_select');
  },

  setCheckedOnlyClicksWhenTheStateDiffers() {
    const agree = document.getElementById('agree');
    let clicks = 0;
    agree.addEventListener('click', () => ++clicks);
    const index = indexOf('Agree');
    check('already checked', __keel.setChecked({ index, checked: true }).checked === true && clicks === 0, clicks);
    check('uncheck', __keel.setChecked({ index, checked: false }).ok && !agree.checked && clicks === 1);
    check('radio', __keel.setChecked({ index: indexOf('Pick'), checked: true }).ok &&
          document.getElementById('radio').checked);
    check('not checkable', __keel.setChecked({ index: indexOf('Count'), checked: true }).reason === 'not_checkable');
  },

  hoverDispatchesPointerMovement() {
    const seen = [];
    counter.addEventListener('mouseover', () => seen.push('mouseover'));
    counter.addEventListener('mousemove', () => seen.push('mousemove'));
    check('hover', __keel.hover({ index: indexOf('Count') }).ok && seen.join(',') === 'mouseover,mousemove', seen);
  },
};

for (const [name, test] of Object.entries(tests)) {
  try {
    test();
  } catch (e) {
    failures.push(name + ' threw ' + (e && e.stack ? e.stack : String(e)));
  }
}
document.getElementById('verdict').textContent =
  `KEEL-JS-TESTS pass=${passed} fail=${failures.length}\n` + failures.map((f) => 'FAIL ' + f).join('\n');
