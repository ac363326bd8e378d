/* Sections open on demand; the pair viewer shows the pair named in the URL hash; the timeline seeks
   and follows the recording. Works from file:// and fetches nothing. */
(function () {
  "use strict";
  function openTo(el) {
    for (var d = el; d; d = d.parentElement) {
      if (d.tagName === "DETAILS") { d.open = true; }
    }
  }
  function show(id) {
    var target = document.getElementById(id);
    if (!target) { return; }
    openTo(target);
    if (target.classList.contains("pair")) {
      document.querySelectorAll("section.pair").forEach(function (s) { s.hidden = s !== target; });
    }
    target.scrollIntoView();
  }
  function route() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (id) { show(id); }
  }
  window.addEventListener("hashchange", route);
  route();
  var reopened = [];
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll("details:not([open])").forEach(function (d) { d.open = true; reopened.push(d); });
  });
  window.addEventListener("afterprint", function () {
    reopened.forEach(function (d) { d.open = false; });
    reopened = [];
  });
  document.querySelectorAll(".timeline .seg").forEach(function (seg) {
    seg.addEventListener("click", function () {
      var audio = seg.closest(".call").querySelector("audio");
      if (!audio) { return; }
      audio.currentTime = Number(seg.dataset.t) / 1000;
      audio.play().catch(function () { /* autoplay refused: the position is still set */ });
    });
  });
  document.querySelectorAll(".call audio").forEach(function (audio) {
    var head = audio.closest(".call").querySelector(".playhead");
    var scale = Number(audio.dataset.scale) || 1;
    audio.addEventListener("timeupdate", function () {
      var frac = Math.min(1, (audio.currentTime * 1000) / scale);
      head.style.left = "calc(74px + (100% - 74px) * " + frac.toFixed(4) + ")";
    });
  });
})();
