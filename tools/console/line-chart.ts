import { html, type SafeHtml } from './html.ts';

/** One line of a {@link lineChart}: a name for its legend, a colour, one value per period (null: no figure). */
export interface ChartSeries {
  readonly name: string;
  readonly color: string;
  readonly values: readonly (number | null)[];
}

const WIDTH = 720;
const HEIGHT = 200;
const PAD = { left: 48, right: 12, top: 12, bottom: 28 };

/**
 * A line chart as inline SVG (no script, no library): one polyline per series over the periods, the y axis from 0 to
 * the largest value, the first and last period's times under the x axis. Values come from the ops functions as
 * numbers; every text in it is escaped.
 */
export function lineChart(options: {
  readonly title: string;
  readonly unit: string;
  readonly labels: readonly string[];
  readonly series: readonly ChartSeries[];
}): SafeHtml {
  const { labels, series } = options;
  const max = Math.max(1, ...series.flatMap((s) => s.values.filter((v): v is number => v !== null)));
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const x = (i: number) => PAD.left + (labels.length <= 1 ? plotW / 2 : (i * plotW) / (labels.length - 1));
  const y = (v: number) => PAD.top + plotH - (v / max) * plotH;
  const lines = series.map((s) => {
    const points = s.values
      .map((v, i) => (v === null ? null : `${x(i).toFixed(1)},${y(v).toFixed(1)}`))
      .filter((p): p is string => p !== null)
      .join(' ');
    return html`<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${points}"><title>${s.name}</title></polyline>`;
  });
  const first = labels[0] ?? '';
  const last = labels.at(-1) ?? '';
  return html`<figure style="margin:0 0 1rem"><figcaption><strong>${options.title}</strong> ${series.map(
    (s) => html` <span style="color:${s.color}">■</span> ${s.name}`,
  )}</figcaption>
<svg role="img" aria-label="${options.title}" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" style="background:#fff;border:1px solid #d9dde3">
<line x1="${PAD.left}" y1="${PAD.top + plotH}" x2="${WIDTH - PAD.right}" y2="${PAD.top + plotH}" stroke="#9aa3af"/>
<line x1="${PAD.left}" y1="${PAD.top}" x2="${PAD.left}" y2="${PAD.top + plotH}" stroke="#9aa3af"/>
<text x="${PAD.left - 6}" y="${PAD.top + 10}" text-anchor="end" font-size="11">${formatAxis(max)}</text>
<text x="${PAD.left - 6}" y="${PAD.top + plotH}" text-anchor="end" font-size="11">0</text>
<text x="${PAD.left - 6}" y="${PAD.top + plotH / 2}" text-anchor="end" font-size="11">${options.unit}</text>
<text x="${PAD.left}" y="${HEIGHT - 8}" font-size="11">${first}</text>
<text x="${WIDTH - PAD.right}" y="${HEIGHT - 8}" text-anchor="end" font-size="11">${last}</text>
${lines}</svg></figure>`;
}

function formatAxis(value: number): string {
  return value >= 100 ? String(Math.round(value)) : String(Number(value.toPrecision(2)));
}
