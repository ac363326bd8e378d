// Blind rating client: keyboard first (Space plays, 1-9 pick, arrows move, Enter submits).
// It knows only opaque clip tokens and the question; the server keeps every label.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const audio = $("audio");
  const params = new URLSearchParams(window.location.search);
  const rater = params.get("rater");
  const RATER_RE = /^[A-Za-z0-9_.-]{1,40}$/;
  let item = null;
  let selected = null;
  let facts = new Set();
  const ACT_KEYS = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "0", "-", "="];
  let scores = {};
  let current = 0;
  let plays = 0;
  let busy = false;
  let noneHeard = false;

  function show(id) {
    for (const s of ["who", "rate", "finished"]) $(s).hidden = s !== id;
  }

  function say(text) {
    $("message").textContent = text || "";
  }

  function button(label, key, onPick) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "choice";
    b.setAttribute("aria-pressed", "false");
    const k = document.createElement("kbd");
    k.textContent = String(key);
    b.append(k, " ", label);
    b.addEventListener("click", onPick);
    return b;
  }

  function renderOptions() {
    const box = $("choices");
    box.replaceChildren();
    item.options.forEach((label, i) => {
      box.append(button(label, item.kind === "observer" ? ACT_KEYS[i] || "" : i + 1, () => pick(i + 1)));
    });
  }

  function renderFacts() {
    const box = $("facts");
    box.replaceChildren();
    item.facts.forEach((label, i) => {
      const b = button(label, "", () => toggleFact(i + 1));
      b.classList.add("fact");
      b.querySelector("kbd").remove();
      box.append(b);
    });
  }

  function toggleFact(n) {
    if (!item || item.done) return;
    if (facts.has(n)) facts.delete(n); else facts.add(n);
    refresh();
  }

  function renderScales() {
    const box = $("choices");
    box.replaceChildren();
    item.scales.forEach((scale, si) => {
      const row = document.createElement("fieldset");
      row.className = "scale";
      row.dataset.index = String(si);
      const legend = document.createElement("legend");
      const title = document.createElement("strong");
      title.textContent = scale.title;
      const q = document.createElement("span");
      q.className = "muted";
      q.textContent = " \u2014 " + scale.question;
      legend.append(title, q);
      const points = document.createElement("div");
      points.className = "points";
      scale.points.forEach((label, pi) => {
        points.append(button(label, pi + 1, () => { current = si; pick(pi + 1); }));
      });
      row.append(legend, points);
      box.append(row);
    });
  }

  function refresh() {
    if (item.kind === "perceptibility" || item.kind === "observer") {
      $("choices").querySelectorAll(".choice").forEach((b, i) => {
        b.setAttribute("aria-pressed", String(selected === i + 1));
      });
      $("facts").querySelectorAll(".choice").forEach((b, i) => {
        b.setAttribute("aria-pressed", String(facts.has(i + 1)));
      });
    } else {
      $("choices").querySelectorAll(".scale").forEach((row, si) => {
        row.classList.toggle("current", si === current);
        const chosen = scores[item.scales[si].name];
        row.querySelectorAll(".choice").forEach((b, pi) => {
          b.setAttribute("aria-pressed", String(chosen === pi + 1));
        });
      });
      const row = $("choices").querySelectorAll(".scale")[current];
      if (row) row.scrollIntoView({ block: "nearest" });
    }
  }

  function pick(n) {
    if (!item || item.done) return;
    if (item.kind === "perceptibility" || item.kind === "observer") {
      if (n < 1 || n > item.options.length) return;
      selected = n;
    } else {
      const scale = item.scales[current];
      if (n < 1 || n > scale.points.length) return;
      scores[scale.name] = n;
      const next = item.scales.findIndex((s, i) => i > current && !(s.name in scores));
      const anyOpen = item.scales.findIndex((s) => !(s.name in scores));
      current = next >= 0 ? next : anyOpen >= 0 ? anyOpen : current;
    }
    say("");
    refresh();
  }

  function move(delta) {
    if (!item || item.kind !== "quality") return;
    current = Math.max(0, Math.min(item.scales.length - 1, current + delta));
    refresh();
  }

  function togglePlay() {
    if (!item || item.done) return;
    if (audio.paused) {
      audio.play().catch(() => say("The browser refused to play; press Space again."));
    } else {
      audio.pause();
    }
  }

  function replay() {
    if (!item || item.done) return;
    audio.currentTime = 0;
    audio.play().catch(() => say("The browser refused to play; press Space again."));
  }

  function answer() {
    if (item.kind === "intelligibility") {
      const text = $("heard").value.replace(/\s+/g, " ").trim();
      return text || noneHeard ? text : null;
    }
    if (item.kind === "perceptibility") return selected;
    if (item.kind === "observer") {
      return selected === null ? null : { act: selected, facts: Array.from(facts).sort((a, b) => a - b) };
    }
    return item.scales.every((s) => s.name in scores) ? scores : null;
  }

  async function submit() {
    if (!item || item.done || busy) return;
    if (plays === 0) return say("Play the clip first (Space).");
    const a = answer();
    if (a === null) {
      const hints = {
        quality: "Give a point on every scale.",
        intelligibility: "Type the words you heard, or choose \u201cNo words understood\u201d.",
      };
      return say(hints[item.kind] || "Pick an answer first (number keys).");
    }
    busy = true;
    try {
      const r = await fetch("api/label", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ rater: rater, clip: item.clip, answer: a, plays: plays }),
        cache: "no-store",
      });
      if (!r.ok && r.status !== 409) {
        say("Not saved: " + (await r.text()));
        return;
      }
      audio.pause();
      $("heard").value = "";
      await loadNext();
    } catch (e) {
      say("Not saved (connection lost); press Enter to try again.");
    } finally {
      busy = false;
    }
  }

  async function loadNext() {
    const r = await fetch("api/next?rater=" + encodeURIComponent(rater), { cache: "no-store" });
    if (!r.ok) {
      say(await r.text());
      return;
    }
    item = await r.json();
    $("progress").textContent = "Rater " + rater + " \u00b7 " + item.completed + " of " + item.total + " rated";
    if (item.done) {
      item.done = true;
      audio.removeAttribute("src");
      show("finished");
      return;
    }
    selected = null;
    facts = new Set();
    scores = {};
    current = 0;
    plays = 0;
    noneHeard = false;
    $("heard").value = "";
    audio.src = "clip/" + item.clip;
    audio.load();
    $("audio-hint").textContent = item.audio_hint;
    $("question").textContent = item.question;
    const observer = item.kind === "observer";
    $("transcript").hidden = !observer;
    $("facts-box").hidden = !observer;
    if (observer) {
      $("transcript").textContent = item.transcript ? "\u201c" + item.transcript + "\u201d" : "(no transcript: listen to the clip)";
      $("facts-question").textContent = item.facts_question;
      renderFacts();
    }
    const typing = item.kind === "intelligibility";
    $("heard-box").hidden = !typing;
    $("choices").hidden = typing;
    if (item.kind === "quality") renderScales(); else if (typing) $("choices").replaceChildren(); else renderOptions();
    say("");
    if (!typing) refresh();
    show("rate");
    (typing ? $("heard") : $("play")).focus();
  }

  function onKey(ev) {
    if (ev.target instanceof HTMLTextAreaElement) {
      // The transcript box: typing stays typing; Enter submits, Escape plays or pauses the clip.
      if (ev.key === "Enter" && !ev.shiftKey) {
        ev.preventDefault();
        submit();
      } else if (ev.key === "Escape") {
        ev.preventDefault();
        togglePlay();
      }
      return;
    }
    if (ev.target instanceof HTMLInputElement || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    if ($("rate").hidden) return;
    if (ev.key === " " || ev.code === "Space") {
      ev.preventDefault();
      if (!ev.repeat) togglePlay();
    } else if (ev.key === "Enter") {
      ev.preventDefault();
      submit();
    } else if (item && item.kind === "observer" && ACT_KEYS.includes(ev.key)) {
      ev.preventDefault();
      pick(ACT_KEYS.indexOf(ev.key) + 1);
    } else if (/^[1-9]$/.test(ev.key)) {
      ev.preventDefault();
      pick(Number(ev.key));
    } else if (ev.key === "ArrowDown") {
      ev.preventDefault();
      move(1);
    } else if (ev.key === "ArrowUp") {
      ev.preventDefault();
      move(-1);
    } else if (ev.key === "r" || ev.key === "R") {
      ev.preventDefault();
      replay();
    }
  }

  function init() {
    audio.tabIndex = -1;
    audio.addEventListener("play", () => { plays += 1; $("play").textContent = "Pause "; $("play").append(kbd("Space")); });
    audio.addEventListener("pause", () => { $("play").textContent = "Play "; $("play").append(kbd("Space")); });
    $("play").addEventListener("click", togglePlay);
    $("submit").addEventListener("click", submit);
    $("heard").addEventListener("input", () => say(""));
    $("nothing-heard").addEventListener("click", () => {
      noneHeard = true;
      $("heard").value = "";
      submit();
    });
    document.addEventListener("keydown", onKey);
    // Buttons activate on Space/Enter key-up; the key-down handler already acted.
    document.addEventListener("keyup", (ev) => {
      const typing = ev.target instanceof HTMLInputElement || ev.target instanceof HTMLTextAreaElement;
      if (!typing && (ev.key === " " || ev.key === "Enter")) ev.preventDefault();
    });
    if (!rater || !RATER_RE.test(rater)) {
      show("who");
      $("who-form").addEventListener("submit", (ev) => {
        ev.preventDefault();
        const v = $("rater-input").value.trim();
        if (!RATER_RE.test(v)) return;
        window.location.search = "?rater=" + encodeURIComponent(v);
      });
      $("rater-input").focus();
      return;
    }
    loadNext();
  }

  function kbd(text) {
    const k = document.createElement("kbd");
    k.textContent = text;
    return k;
  }

  init();
})();
