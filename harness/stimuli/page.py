"""A page where every stimulus line can be heard beside what the reference recogniser made of it."""

from __future__ import annotations

from html import escape

from voice_audit.harness.model.stimulus import CellScreen, ConditionStats, StimulusReport

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;max-width:72rem;color:#1b1b1b}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
.pass{color:#116611}.fail{color:#a00000;font-weight:600}.not-evaluable{color:#885500}
audio{height:2rem;width:14rem}
"""


def _num(x: float | None, fmt: str = "{:.2f}") -> str:
    return "–" if x is None else fmt.format(x)


def _ci(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f" [{ci[0]:.2f}, {ci[1]:.2f}]"


def _condition_row(side: str, s: ConditionStats) -> str:
    return (
        f"<tr><td>{side}</td><td>{escape(s.condition)}</td><td>{escape(s.backend)}</td><td>{len(s.voices)}</td>"
        f"<td>{s.lines}</td><td>{_num(s.wer)}{_ci(s.wer_ci)}</td><td>{_num(s.rate_wps)}</td>"
        f"<td>{_num(s.f0_median_hz, '{:.0f}')}</td><td>{_num(s.f0_range_st, '{:.1f}')}</td>"
        f"<td>{_num(s.lufs, '{:.1f}')}</td><td>{_num(s.snr_db, '{:.1f}')}</td></tr>"
    )


def _cell(cell: CellScreen) -> str:
    head = ", ".join(escape(p) for p in cell.pairs)
    verdict = cell.verdict + (" (overridden)" if cell.overridden else "")
    reasons = "".join(f"<li>{escape(r)}</li>" for r in cell.reasons)
    return (
        f"<section><h2>{head} <small>({escape(cell.scenario_id)})</small></h2>"
        f'<p class="{cell.verdict}">pre-screen: {escape(verdict)}</p>'
        + (f"<ul>{reasons}</ul>" if reasons else "")
        + f"<p>gap (b - a): {_num(cell.gap)}{_ci(cell.gap_ci)}; ratio {_num(cell.ratio)}</p>"
        + _confounds(cell)
        + "<table><tr><th>side</th><th>condition</th><th>backend</th><th>voices</th><th>lines</th>"
        "<th>reference WER [95%]</th><th>words/s</th><th>F0 Hz</th><th>F0 range st</th><th>LUFS</th><th>SNR dB</th></tr>"
        + _condition_row("a", cell.a)
        + _condition_row("b", cell.b)
        + "</table></section>"
    )


def _confounds(cell: CellScreen) -> str:
    if not cell.confounds:
        return "<p>non-contrast acoustics: matched within the plan's tolerances</p>"
    items = "".join(f"<li>{escape(c.text)}</li>" for c in cell.confounds)
    return f'<p class="fail">confound: the voices differ in more than the contrast</p><ul>{items}</ul>'


def render_page(report: StimulusReport, *, audio: bool = True) -> str:
    th = report.thresholds
    rows = "".join(
        f"<tr><td>{escape(r.condition)}</td><td>{escape(r.voice)}</td><td>{escape(r.text)}</td>"
        f"<td>{escape(r.heard)}</td><td>{r.errors}/{r.words}</td>"
        + (f'<td><audio controls preload="none" src="{escape(r.file)}"></audio></td>' if audio else "")
        + "</tr>"
        for r in report.lines
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>Stimuli: {escape(report.campaign)}</title><style>{_CSS}</style></head><body>"
        f"<h1>Stimuli of {escape(report.campaign)}</h1>"
        f"<p>Every line each voice of each cell can say, as the agent would receive it (channel: "
        f"{escape(str(report.channel))}), read by the reference recogniser {escape(str(report.recogniser))}. "
        f"Pre-screen: each condition's WER at most {th.max_wer:.2f}; a gap over {th.max_gap:.2f} fails only "
        f"when the worse condition's WER is also over {th.max_ratio:.1f} times the better's. Non-contrast "
        f"acoustics: speaking rates within {100 * th.max_rate_gap:.0f}%, median F0 within {th.max_f0_gap_st:.1f} "
        f"semitones, loudness within {th.max_lufs_gap:.1f} LU. Rate matching: "
        + escape("; ".join(f"{k}: {v}" for k, v in report.rate_matching.items()) or "not recorded")
        + "</p>"
        + "".join(_cell(c) for c in report.cells)
        + "<h2>Lines</h2><table><tr><th>condition</th><th>voice</th><th>said</th><th>heard</th><th>errors/words</th>"
        + ("<th>listen</th>" if audio else "")
        + f"</tr>{rows}</table></body></html>"
    )
