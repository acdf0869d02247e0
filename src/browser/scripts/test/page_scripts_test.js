// page_scripts_test.js — assertions on the page scripts against page_scripts_test.html, in real Chromium.
// Each test is a function; the verdict line "KEEL-JS-TESTS pass=<n> fail=<m>" and one line per failure are
// written into #verdict, which the CTest reads from `chromium --dump-dom`.
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

function lineWith(snapshot, fragment) {
  return snapshot.lines.find((line) => line.includes(fragment));
}

function refNamed(snapshot, role, name) {
  return snapshot.refs.find((ref) => ref.role === role && ref.name === name);
}

const tests = {
  installsOnceAndKeepsTheObject() {
    check('installed', typeof __keel === 'object' && __keel.version === 1);
    check('not enumerable', !Object.keys(globalThis).includes('__keel'));
  },

  formControlsGetRefsWithNamesValuesAndStates() {
    const s = __keel.snapshot({ nextIndex: 1 });
    check('textbox', /^ *e\d+ textbox "Search" = "shoes" \[required\]$/.test(lineWith(s, '"Search" =') || ''),
          lineWith(s, '"Search"'));
    check('checkbox', /e\d+ checkbox "Agree" \[checked\]/.test(lineWith(s, 'checkbox') || ''), lineWith(s, 'checkbox'));
    check('password masked', (lineWith(s, 'textbox = "•••"') || '').length > 0 && !s.lines.join('\n').includes('secret'),
          s.lines.filter((l) => l.includes('•') || l.includes('secret')));
    check('select', /e\d+ combobox = "medium" \(small, medium, large\)/.test(lineWith(s, 'combobox') || ''),
          lineWith(s, 'combobox'));
    check('textarea by aria-label', !!refNamed(s, 'textbox', 'Notes'));
    check('button', !!refNamed(s, 'button', 'Go'));
    check('submit input by value', !!refNamed(s, 'button', 'Send'));
    check('disabled state', /button "Disabled" \[disabled\]/.test(lineWith(s, '"Disabled"') || ''));
    check('hidden input skipped', !s.lines.join('\n').includes('token'));
    check('label text not repeated', !s.lines.some((l) => l.trim() === 'Agree' || l.trim() === 'Search'),
          s.lines.filter((l) => /^ *(Agree|Search)$/.test(l)));
    check('label without the control inside it', !!refNamed(s, 'combobox', 'Country'), lineWith(s, 'France'));
    check('legend only as the group name', s.lines.includes(' group "Delivery"') &&
          !s.lines.some((l) => l.trim() === 'Delivery'), s.lines.filter((l) => l.includes('Delivery')));
    check('labelling text not repeated', !s.lines.some((l) => l.trim() === 'City') && !!refNamed(s, 'textbox', 'City'),
          s.lines.filter((l) => l.includes('City')));
    check('unchecked required checkbox is not invalid', /checkbox "Terms" \[required\]$/.test(lineWith(s, '"Terms"') || ''),
          lineWith(s, '"Terms"'));
    check('form is a structure line', s.lines.includes('form "Search"'), s.lines.slice(0, 12));
  },

  linksShowTargets() {
    const s = __keel.snapshot({});
    check('anchor', /link "Top" → #top$/.test(lineWith(s, '"Top"') || ''), lineWith(s, '"Top"'));
    check('same-origin path', /link "Other page" → \/other\/page\.html\?q=1$/.test(lineWith(s, '"Other page"') || ''),
          lineWith(s, '"Other page"'));
    check('javascript: target omitted', /link "Script link"$/.test(lineWith(s, '"Script link"') || ''));
  },

  invisibleSubtreesAreSkipped() {
    const text = __keel.snapshot({}).lines.join('\n');
    check('display none', !text.includes('Hidden by display'));
    check('aria-hidden', !text.includes('Hidden from a11y'));
    check('visibility hidden', !text.includes('Invisible'));
    check('display contents children kept', text.includes('button "In contents"'));
  },

  textRunsAreMergedAndWellFormed() {
    const s = __keel.snapshot({});
    check('merged run', s.lines.includes('Some bold text and more.'), s.lines.filter((l) => l.includes('bold')));
    const lone = lineWith(s, 'lone');
    check('lone surrogate replaced', lone === 'lone \uFFFD surrogate', lone);
  },

  namesAreCappedWithoutSplittingACharacter() {
    const button = document.createElement('button');
    button.setAttribute('aria-label', 'a'.repeat(78) + '\u{1F600}' + 'tail');  // the cap falls inside the emoji
    document.body.insertBefore(button, document.getElementById('verdict'));
    const name = __keel.snapshot({}).refs.find((r) => r.name.startsWith('aaaa')).name;
    button.remove();
    check('capped with an ellipsis', name === 'a'.repeat(78) + '…', name);
  },

  listsUseMarkers() {
    const s = __keel.snapshot({});
    const at = s.lines.indexOf('list (2 items)');
    check('list line', at >= 0, s.lines);
    check('first item marked', / - e\d+ link "Item 0" → #i0$/.test(s.lines[at + 1] || ''), s.lines[at + 1]);
    check('item continuation indented', /^   e\d+ button "Buy 0"$/.test(s.lines[at + 2] || ''), s.lines[at + 2]);
    check('item text', s.lines[at + 3] === '   desc 0', s.lines[at + 3]);
    check('text-only item', s.lines[at + 4] === ' - Plain item', s.lines[at + 4]);
  },

  shadowRootsAndSlotsAreWalked() {
    const s = __keel.snapshot({});
    check('slotted name', !!refNamed(s, 'button', 'Slotted label'), s.refs.map((r) => r.name));
    check('shadow text', s.lines.includes('Shadow text'));
  },

  clickableHintsAndRoles() {
    const s = __keel.snapshot({});
    check('role=button div', !!refNamed(s, 'button', 'Before'));
    check('onclick div', !!refNamed(s, 'clickable', 'Clickable div'), lineWith(s, 'Clickable'));
  },

  iframesAreListedNotEntered() {
    const s = __keel.snapshot({});
    check('one iframe', s.iframes.length === 1, s.iframes);
    check('iframe line', /e\d+ iframe/.test(s.lines[s.iframes[0].line] || ''), s.lines[s.iframes[0].line]);
    check('frame content not inlined', !s.lines.join('\n').includes('In frame'));
  },

  viewportFlags() {
    const s = __keel.snapshot({});
    const below = refNamed(s, 'button', 'Far below');
    check('far element outside the viewport', below && below.inViewport === false, below);
    check('heading inside', refNamed(s, 'button', 'Go').inViewport === true);
    check('one flag per line', s.inView.length === s.lines.length);
    check('flag of the far line', s.inView[below.line] === '0');
  },

  refsAreStableAndNeverReused() {
    const first = __keel.snapshot({ nextIndex: 1 });
    const second = __keel.snapshot({ nextIndex: 1 });
    check('same indices', JSON.stringify(first.refs.map((r) => r.index)) ===
          JSON.stringify(second.refs.map((r) => r.index)));
    const before = refNamed(second, 'button', 'Before');
    document.getElementById('rename').textContent = 'After';
    const third = __keel.snapshot({ nextIndex: 1 });
    const after = refNamed(third, 'button', 'After');
    check('renamed element gets a new index', after && after.index > before.index && after.index >= second.nextIndex,
          [before, after]);
    check('old index no longer resolves', __keel.describeRef({ index: before.index }).found === false);
    const described = __keel.describeRef({ index: after.index });
    check('describeRef', described.found && described.name === 'After' && described.registeredName === 'After',
          described);
    const fourth = __keel.snapshot({ nextIndex: 1000 });
    check('known elements keep their index', refNamed(fourth, 'button', 'After').index === after.index);
    const extra = document.createElement('button');
    extra.textContent = 'New one';
    document.body.insertBefore(extra, document.getElementById('verdict'));
    const fifth = __keel.snapshot({ nextIndex: 1000 });
    check('new element starts at nextIndex', refNamed(fifth, 'button', 'New one').index === 1000);
    extra.remove();
    check('removed element no longer resolves', __keel.describeRef({ index: 1000 }).found === false);
  },

  refPrefixForSubframes() {
    const s = __keel.snapshot({ refPrefix: 'f2e' });
    check('prefix', /^ *f2e\d+ button "Go"$/.test(lineWith(s, '"Go"') || ''), lineWith(s, '"Go"'));
  },

  budgetsStopTheWalk() {
    const s = __keel.snapshot({ maxNodes: 5 });
    check('truncated by nodes', s.truncated && /5 elements/.test(s.truncatedReason), s.truncatedReason);
    const timed = __keel.snapshot({ budgetMs: -1 });
    check('stats', typeof timed.stats.elements === 'number');
  },

  findTextAndReadText() {
    const found = __keel.findText({ query: 'item', context: 5 });
    check('found', found.total >= 2 && found.matches.length === found.total, found);
    const none = __keel.findText({ query: 'no such text anywhere' });
    check('nothing found', none.total === 0 && none.matches.length === 0);
    const page1 = __keel.readText({ maxChars: 10 });
    check('first page', page1.text.length === 10 && page1.offset === 0 && page1.nextOffset === 10, page1);
    const last = __keel.readText({ offset: page1.total - 3, maxChars: 10 });
    check('last page', last.nextOffset === null && last.text.length === 3, last);
  },

  resultsAreJson() {
    const s = __keel.snapshot({});
    check('round trip', JSON.stringify(JSON.parse(JSON.stringify(s))) === JSON.stringify(s));
  },
};

for (const [name, test] of Object.entries(tests)) {
  try {
    test();
  } catch (e) {
    failures.push(name + ' threw ' + (e && e.stack ? e.stack : String(e)));
  }
}
// --dump-dom serializes the DOM as UTF-8 and Chromium 156 dies (SIGILL) on the lone surrogate: remove it first.
document.getElementById('surrogate').textContent = '';
document.getElementById('verdict').textContent =
  `KEEL-JS-TESTS pass=${passed} fail=${failures.length}\n` + failures.map((f) => 'FAIL ' + f).join('\n');
