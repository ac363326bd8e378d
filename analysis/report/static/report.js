/* Pair viewer: show the pair named in the URL hash; seek and follow the recording on the timeline.
   Works from file:// and fetches nothing. */
(function () {
  "use strict";
  function show(id) {
    var target = document.getElementById(id);
    if (!target || !target.classList.contains("pair")) { return; }
    document.querySelectorAll("section.pair").forEach(function (s) { s.hidden = s !== target; });
    target.scrollIntoView();
  }
  function route() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (id.indexOf("pair-") === 0) { show(id); }
  }
  window.addEventListener("hashchange", route);
  route();
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
