// mcpsim: makes every trace section of the page interactive. Reads the section's step data
// (script.m-data), draws the timeline, the actor filters, the step details and the jump button,
// and reports on <html> what it did (data-ready, data-rows, data-violation-visible, data-jumped),
// and on each section its own (data-rows, data-violation-visible, data-diagram-violation-visible).
(function () {
  'use strict';
  var root = document.documentElement;

  function cell(tr, text) {
    var td = document.createElement('td');
    td.textContent = String(text);
    tr.appendChild(td);
  }

  // True when the row is laid out (not filtered out) and inside the viewport's width.
  function shown(tr) {
    if (!tr || tr.offsetParent === null) return false;
    var box = tr.getBoundingClientRect();
    return box.height > 0 && box.width > 0;
  }

  // True when the row is within the visible part of its scrolling table and of the window.
  function onScreen(tr) {
    if (!shown(tr)) return false;
    var box = tr.getBoundingClientRect();
    var wrap = tr.closest('.m-table').getBoundingClientRect();
    var h = window.innerHeight || root.clientHeight;
    return box.top >= wrap.top - 1 && box.bottom <= wrap.bottom + 1 && box.bottom > 0 && box.top < h;
  }

  function init(section) {
    var data = JSON.parse(section.querySelector('script.m-data').textContent);
    var tbody = section.querySelector('tbody');
    var detail = section.querySelector('.m-detail');
    var filters = section.querySelector('.m-filters');
    var jump = section.querySelector('.m-jump');
    var rows = [];
    var broken = {};
    var targets = [];
    data.violations.forEach(function (v) {
      if (v.step === null) return;
      (broken[v.step] = broken[v.step] || []).push(v.invariant);
      if (targets.indexOf(v.step) < 0) targets.push(v.step);
    });

    data.steps.forEach(function (s) {
      var tr = document.createElement('tr');
      tr.id = section.id + '-s' + s.i;
      tr.setAttribute('data-step', String(s.i));
      tr.setAttribute('data-actor', s.actor);
      [s.i, s.time, s.actor, s.kind, s.summary].forEach(function (v) { cell(tr, v); });
      if (broken[s.i]) {
        tr.classList.add('m-violating');
        tr.setAttribute('data-violation', broken[s.i].join(' '));
      }
      tr.title = JSON.stringify(s.step, null, 2);
      tr.addEventListener('click', function () { select(s.i, false); });
      tr.addEventListener('mouseenter', function () { show(s.i); });
      tbody.appendChild(tr);
      rows.push(tr);
    });

    var actors = [];
    data.steps.forEach(function (s) { if (actors.indexOf(s.actor) < 0) actors.push(s.actor); });
    var boxes = {};
    actors.forEach(function (a) {
      var label = document.createElement('label');
      var box = document.createElement('input');
      box.type = 'checkbox';
      box.checked = true;
      box.value = a;
      box.addEventListener('change', refilter);
      boxes[a] = box;
      label.appendChild(box);
      label.appendChild(document.createTextNode(' ' + a));
      filters.appendChild(document.createTextNode(' '));
      filters.appendChild(label);
    });

    function refilter() {
      rows.forEach(function (tr) {
        tr.hidden = !boxes[tr.getAttribute('data-actor')].checked;
      });
    }

    var selected = null;
    // Hovering shows a step's fields; leaving the table shows the selected one's again.
    tbody.addEventListener('mouseleave', function () {
      if (selected) show(Number(selected.getAttribute('data-step')));
    });
    function show(i) {
      detail.textContent = JSON.stringify(data.steps[i].step, null, 2);
    }
    function select(i, scroll) {
      var tr = rows[i];
      if (!tr) return;
      var box = boxes[tr.getAttribute('data-actor')];
      if (!box.checked) {
        box.checked = true;
        refilter();
      }
      if (selected) selected.classList.remove('m-current');
      selected = tr;
      tr.classList.add('m-current');
      show(i);
      if (scroll) {
        tr.scrollIntoView({ block: 'center', inline: 'nearest' });
      }
    }

    var next = 0;
    jump.addEventListener('click', function () {
      if (!targets.length) return;
      var i = targets[next % targets.length];
      next += 1;
      select(i, true);
      rows[i].classList.add('m-flash');
      root.setAttribute('data-jumped', String(i));
      root.setAttribute('data-jumped-on-screen', onScreen(rows[i]) ? '1' : '0');
    });

    // Step links in the violation list and the cause chains, and rows of the diagram.
    section.addEventListener('click', function (e) {
      var link = e.target.closest('a.m-step, svg [data-step]');
      if (!link || !section.contains(link)) return;
      e.preventDefault();
      select(Number(link.getAttribute('data-step')), true);
    });

    return { rows: rows.length, first: targets.length ? rows[targets[0]] : null, jump: jump };
  }

  var sections = Array.prototype.slice.call(document.querySelectorAll('section.m-trace'));
  var drawn = sections.map(init);
  var total = drawn.reduce(function (n, d) { return n + d.rows; }, 0);
  // Each section's own report (a check page holds one per broken cell): its first violating row
  // and the diagram's mark of it laid out.
  sections.forEach(function (section, k) {
    var d = drawn[k];
    section.setAttribute('data-rows', String(d.rows));
    if (!d.first) return;
    section.setAttribute('data-violation-step', d.first.getAttribute('data-step'));
    section.setAttribute('data-violation-visible', shown(d.first) ? '1' : '0');
    var mark = section.querySelector('.m-diagram svg g.violation');
    var box = mark ? mark.getBoundingClientRect() : null;
    section.setAttribute('data-diagram-violation-visible', box && box.width > 0 && box.height > 0 ? '1' : '0');
  });
  root.setAttribute('data-rows', String(total));
  var first = drawn.filter(function (d) { return d.first; })[0];
  if (first) {
    root.setAttribute('data-violation-visible', shown(first.first) ? '1' : '0');
    root.setAttribute('data-violation-step', first.first.getAttribute('data-step'));
    if (window.location.hash === '#jump') first.jump.click();
  }
  root.setAttribute('data-ready', '1');
})();
