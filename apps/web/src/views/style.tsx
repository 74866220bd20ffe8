/**
 * The result views' own styles: name chips, charts, ballots, legends. They use the app's colour
 * variables (styles.css) and, for what those do not name, `--view-…` variables with a light and a
 * dark value, so the views follow the theme.
 *
 * Kept in a module rather than a .css file imported by the views: the jsdom tests load the views
 * through jest, which cannot load CSS. React hoists the <style> into <head> once, however many
 * views render it.
 */
export const VIEW_CSS = `
:root {
  --view-series-0: #0b5cad;
  --view-series-1: #1a7f37;
  --view-series-2: #bc4c00;
  --view-series-3: #8250df;
  --view-series-4: #b42318;
  --view-series-5: #0a7d8c;
  --view-series-6: #6e7781;
  --view-bar: #6f9fd8;
  --view-track: #eef1f4;
  --view-chip-bg: #eaeef2;
  --view-badge-bg: #d0d9e2;
  --view-band: rgba(11, 92, 173, 0.16);
  --view-grid: #d8dee4;
  --view-added-bg: #dafbe1;
  --view-removed-bg: #ffe1de;
  --view-win-border: #0b5cad;
}
@media (prefers-color-scheme: dark) {
  :root {
    --view-series-0: #58a6ff;
    --view-series-1: #3fb950;
    --view-series-2: #f0883e;
    --view-series-3: #bc8cff;
    --view-series-4: #ff7b72;
    --view-series-5: #39c5cf;
    --view-series-6: #9198a1;
    --view-bar: #2f6fb8;
    --view-track: #262c34;
    --view-chip-bg: #2d333b;
    --view-badge-bg: #424a53;
    --view-band: rgba(88, 166, 255, 0.22);
    --view-grid: #373e47;
    --view-added-bg: #0f3d1e;
    --view-removed-bg: #5a1e1e;
    --view-win-border: #58a6ff;
  }
}

.result {
  min-width: 0;
  max-width: 100%;
  overflow-wrap: anywhere;
}
.result h3,
.result h4 {
  overflow-wrap: anywhere;
}
.result .markdown pre,
.result .table-scroll {
  max-width: 100%;
  overflow-x: auto;
}
.result td,
.result th {
  overflow-wrap: break-word;
  padding-inline: 0.35rem;
}
.result td .chip-name {
  overflow-wrap: break-word;
}
.result .markdown table {
  display: block;
  max-width: 100%;
  overflow-x: auto;
}
.result .cards {
  display: grid;
  grid-template-columns: repeat(auto-fill, minmax(min(240px, 100%), 1fr));
  gap: 0.8rem;
}

/* A model's name with its anonymous label as a small badge before it. */
.name-chip {
  display: inline;
  background: var(--view-chip-bg);
  color: var(--ink);
  border-radius: 6px;
  padding: 0.05em 0.35em;
  font-weight: 600;
  box-decoration-break: clone;
  -webkit-box-decoration-break: clone;
}
.label-badge {
  display: inline-block;
  font-size: 0.72em;
  font-weight: 600;
  line-height: 1.3;
  padding: 0 0.35em;
  border-radius: 4px;
  background: var(--view-badge-bg);
  color: var(--ink);
  vertical-align: 0.1em;
  white-space: nowrap;
}
.badge-scope {
  font-weight: 400;
}
.chip-name {
  overflow-wrap: anywhere;
}

/* Figures: a chart, its legend and its caption. */
.figure {
  margin: 0.6rem 0 1rem;
  min-width: 0;
}
.figure figcaption {
  color: var(--muted);
  font-size: 0.85rem;
  margin-top: 0.3rem;
}
.legend {
  display: flex;
  flex-wrap: wrap;
  gap: 0.3rem 1rem;
  list-style: none;
  padding: 0;
  margin: 0.4rem 0 0;
  font-size: 0.85rem;
  color: var(--ink);
}
.legend li {
  display: inline-flex;
  align-items: center;
  gap: 0.35rem;
  min-width: 0;
}
.swatch {
  display: inline-block;
  flex: none;
  width: 0.9rem;
  height: 0.9rem;
  border-radius: 3px;
}
.swatch.dot {
  border-radius: 50%;
}
.swatch.ring {
  border-radius: 50%;
  background: transparent;
  border: 2px solid var(--accent);
  box-sizing: border-box;
}
.swatch.line {
  height: 3px;
  border-radius: 0;
  background: var(--accent);
}
.swatch.dashed {
  height: 0;
  border-radius: 0;
  border-top: 2px dashed var(--ink);
  background: transparent;
}
.swatch.band {
  background: var(--view-band);
  border: 1px solid var(--accent);
  box-sizing: border-box;
}
.swatch.whisker {
  height: 0;
  border-top: 2px solid var(--ink);
  border-radius: 0;
  background: transparent;
}
.swatch.bar {
  background: var(--view-bar);
}

.series-0 { background: var(--view-series-0); fill: var(--view-series-0); stroke: var(--view-series-0); }
.series-1 { background: var(--view-series-1); fill: var(--view-series-1); stroke: var(--view-series-1); }
.series-2 { background: var(--view-series-2); fill: var(--view-series-2); stroke: var(--view-series-2); }
.series-3 { background: var(--view-series-3); fill: var(--view-series-3); stroke: var(--view-series-3); }
.series-4 { background: var(--view-series-4); fill: var(--view-series-4); stroke: var(--view-series-4); }
.series-5 { background: var(--view-series-5); fill: var(--view-series-5); stroke: var(--view-series-5); }
.series-6 { background: var(--view-series-6); fill: var(--view-series-6); stroke: var(--view-series-6); }

/* Horizontal bars (HTML): each label on its own line above its bar, so they never overlap. */
.hbars {
  display: grid;
  gap: 0.45rem;
  max-width: 560px;
}
.hbar-row {
  display: grid;
  grid-template-columns: minmax(0, 1fr) 3ch;
  column-gap: 0.4rem;
  align-items: center;
}
.hbar-label {
  grid-column: 1 / -1;
  font-size: 0.9rem;
  min-width: 0;
}
.hbar-track,
.scale-track {
  position: relative;
  height: 1.1rem;
  background: var(--view-track);
  border-radius: 4px;
}
.hbar {
  display: block;
  height: 100%;
  min-width: 2px;
  border-radius: 4px;
  background: var(--view-bar);
}
.hbar.win {
  background: var(--accent);
}
.hbar.zero {
  min-width: 0;
}
.hbar.tone-ok { background: var(--ok); }
.hbar.tone-warn { background: var(--warn); }
.hbar.tone-bad { background: var(--bad); }
.hbar-value {
  font-variant-numeric: tabular-nums;
  font-weight: 600;
  text-align: right;
}
.axis {
  position: relative;
  height: 1.2rem;
  font-size: 0.75rem;
  color: var(--muted);
  border-top: 1px solid var(--line);
}
.axis span {
  position: absolute;
  top: 0.1rem;
  transform: translateX(-50%);
  white-space: nowrap;
}
.axis span.first {
  transform: none;
}
.axis span.last {
  transform: translateX(-100%);
}
.axis-title {
  font-size: 0.75rem;
  color: var(--muted);
}

/* A value on a scale with a range (jury dimensions) and dots on a scale (council ranks). */
.scale-track .avg-bar {
  position: absolute;
  left: 0;
  top: 0;
  bottom: 0;
  border-radius: 4px;
  background: var(--view-bar);
}
.scale-track .whisker {
  position: absolute;
  top: 50%;
  height: 0;
  border-top: 2px solid var(--ink);
}
.scale-track .whisker::before,
.scale-track .whisker::after {
  content: '';
  position: absolute;
  top: -0.45rem;
  height: 0.8rem;
  border-left: 2px solid var(--ink);
}
.scale-track .whisker::before {
  left: -1px;
}
.scale-track .whisker::after {
  right: -1px;
}
.scale-track .mark,
.scale-track .dot {
  position: absolute;
  top: 50%;
  width: 0.7rem;
  height: 0.7rem;
  border-radius: 50%;
  transform: translate(-50%, -50%);
  box-sizing: border-box;
}
.scale-track .mark {
  border: 2px solid var(--accent);
  background: transparent;
}
.scale-track .dot {
  width: 0.95rem;
  height: 0.95rem;
  background: var(--accent);
  border: 2px solid var(--ink);
}
.scale-track .threshold-mark {
  position: absolute;
  top: -0.25rem;
  bottom: -0.25rem;
  border-left: 2px dashed var(--ink);
}
.stack {
  display: flex;
  height: 100%;
  border-radius: 4px;
  overflow: hidden;
}
.stack > span {
  display: block;
  height: 100%;
}
.scale-rows {
  display: grid;
  gap: 0.7rem;
  max-width: 560px;
}
.scale-row {
  display: grid;
  gap: 0.25rem;
}
.scale-label {
  font-size: 0.9rem;
  display: flex;
  flex-wrap: wrap;
  justify-content: space-between;
  gap: 0 0.6rem;
}
.scale-label .value {
  font-variant-numeric: tabular-nums;
  color: var(--ink);
}

/* SVG charts scale with their container (viewBox); their text follows the theme. */
.svg-chart {
  display: block;
  width: 100%;
  max-width: 560px;
  height: auto;
  overflow: visible;
}
.svg-chart text {
  font-size: 11px;
  fill: var(--ink);
}
.svg-chart .tick-label {
  fill: var(--muted);
}
.svg-chart.convergence text {
  font-size: 12px;
}
.svg-chart.radar text {
  font-size: 13px;
}
.svg-chart.radar .ring-label {
  font-size: 10px;
}
.svg-chart .axis-line {
  stroke: var(--muted);
  stroke-width: 1;
}
.svg-chart .gridline {
  stroke: var(--view-grid);
  stroke-width: 1;
}
.svg-chart .band {
  fill: var(--view-band);
  stroke: var(--accent);
  stroke-width: 0.5;
}
.svg-chart .mean-line {
  fill: none;
  stroke: var(--accent);
  stroke-width: 2;
}
.svg-chart .mean-mark {
  stroke: var(--accent);
  stroke-width: 3;
}
.svg-chart .threshold {
  fill: none;
  stroke: var(--ink);
  stroke-width: 1.5;
  stroke-dasharray: 5 4;
}
.svg-chart .trajectory {
  fill: none;
  stroke-width: 1.2;
  opacity: 0.7;
}
.svg-chart .estimate {
  stroke: var(--ink);
  stroke-width: 1;
}
.svg-chart .radar-ring {
  fill: none;
  stroke: var(--view-grid);
}
.svg-chart .radar-spoke {
  stroke: var(--view-grid);
}
.svg-chart .radar-shape {
  fill: var(--view-band);
  stroke: var(--accent);
  stroke-width: 2;
}
.svg-chart .radar-point {
  fill: var(--accent);
}

/* Rankings, evaluations, ballots, answers. */
.ranking-grid {
  display: grid;
  grid-template-columns: repeat(auto-fit, minmax(min(300px, 100%), 1fr));
  gap: 1rem;
  align-items: start;
}
.ranking-list {
  margin: 0.4rem 0;
  padding-left: 1.6rem;
}
.ranking-list li {
  margin: 0.2rem 0;
}
.ballots {
  list-style: none;
  padding: 0;
  margin: 0.6rem 0 0;
  display: grid;
  gap: 0.6rem;
}
.ballot {
  border-left: 3px solid var(--line);
  padding: 0.2rem 0 0.2rem 0.7rem;
}
.ballot-head {
  font-weight: 600;
}
.ballot-reason {
  color: var(--ink);
}
.ballot-reason .markdown > :first-child {
  margin-top: 0.2rem;
}
.ballot-reason .markdown > :last-child {
  margin-bottom: 0;
}
.answer.winner {
  border-color: var(--view-win-border);
  border-width: 2px;
}
.answer-body.collapsed {
  max-height: 9em;
  overflow: hidden;
  -webkit-mask-image: linear-gradient(to bottom, black 60%, transparent);
  mask-image: linear-gradient(to bottom, black 60%, transparent);
}
.answer-head {
  display: flex;
  flex-wrap: wrap;
  align-items: baseline;
  gap: 0.3rem 0.5rem;
  margin: 0 0 0.3rem;
}
.result button.more {
  background: none;
  border: 0;
  color: var(--accent);
  padding: 0.2rem 0;
  text-decoration: underline;
}
.stat-line {
  display: flex;
  flex-wrap: wrap;
  gap: 0.2rem 0.9rem;
  margin: 0.3rem 0;
  color: var(--ink);
}
.stat-line .muted,
.result .muted {
  color: var(--muted);
}
.result .cards > .card {
  margin: 0;
}
.estimate-card h4,
.estimate-card p {
  margin: 0 0 0.25rem;
}
.estimate-card .estimate-value {
  font-size: 1.1rem;
  font-weight: 700;
  font-variant-numeric: tabular-nums;
}
.result .estimate-cards {
  grid-template-columns: repeat(auto-fill, minmax(min(190px, 100%), 1fr));
  margin-top: 0.6rem;
}
.overall {
  font-size: 1.6rem;
  font-weight: 700;
}
.result .diff {
  white-space: pre-wrap;
  overflow-wrap: anywhere;
  font-size: 0.85rem;
}
.result .diff-added {
  background: var(--view-added-bg);
  text-decoration: none;
}
.result .diff-removed {
  background: var(--view-removed-bg);
  text-decoration: line-through;
}
.sr-only {
  position: absolute;
  width: 1px;
  height: 1px;
  margin: -1px;
  padding: 0;
  overflow: hidden;
  clip: rect(0 0 0 0);
  white-space: nowrap;
  border: 0;
}

/* On a phone, a table keeps the columns that matter (the chart beside it shows the rest). */
@media (max-width: 420px) {
  .result .narrow-hide {
    display: none;
  }
}

/* Jurors: cards side by side; on a phone, one at a time behind tabs. */
.jury .juror-tabs {
  display: none;
}
@media (max-width: 700px) {
  .jury .juror-tabs {
    display: flex;
  }
  .jury .cards .card {
    display: none;
  }
  .jury .cards .card.active {
    display: block;
  }
}
`;

/** The views' styles, once in <head> (React 19 hoists and deduplicates a <style> with an href). */
export function ViewStyles() {
  return (
    <style href="conclave-views" precedence="default">
      {VIEW_CSS}
    </style>
  );
}
