// Every chart on the dashboard, drawn by uPlot (the vendored npm package).
// Charts size themselves to their container and follow its width.

import uPlot from '../vendor/uPlot.esm.js';
import { h } from './dom.js';

export const kColors = {
  prism: '#4f46e5',
  prismLight: '#a5b4fc',
  baseline: '#9a3412',
  baselineLight: '#fdba74',
  satisfied: '#15803d',
  violated: '#b91c1c',
  lr: '#0e7490',
};

const kAxisStroke = '#475569';
// Tick steps for integer axes (training steps, layers): no 2.5th layer.
const kIntegerIncrs = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2.5e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6];
const kGridStroke = 'rgba(100, 116, 139, 0.15)';

function axis(label, extra = {}) {
  return {
    label,
    stroke: kAxisStroke,
    grid: { stroke: kGridStroke, width: 1 },
    ticks: { stroke: kGridStroke, width: 1 },
    font: '12px system-ui, sans-serif',
    labelFont: '12px system-ui, sans-serif',
    ...extra,
  };
}

// mount creates a uPlot of the container's width and keeps it that wide.
function mount(container, options, data) {
  const holder = h('div', { class: 'chart-canvas' });
  container.appendChild(holder);
  const width = Math.max(240, container.clientWidth || 480);
  const plot = new uPlot({ ...options, width }, data, holder);
  if (typeof ResizeObserver !== 'undefined') {
    let last = width;
    const observer = new ResizeObserver(() => {
      const next = Math.max(240, container.clientWidth);
      if (!holder.isConnected) {
        observer.disconnect();
        plot.destroy();
      } else if (Math.abs(next - last) > 2) {
        last = next;
        plot.setSize({ width: next, height: options.height });
      }
    });
    observer.observe(container);
  }
  return plot;
}

// lineChart overlays curves that need not share x values: series is a list of
// { label, x: [...], y: [...], color, dash, width, points }; yFormat formats
// the y axis ticks (uPlot's default otherwise). Returns the uPlot.
export function lineChart(container, { xLabel, yLabel, series, height = 280, yDigits = 3, yFormat = null }) {
  const tables = series.map((s) => [Float64Array.from(s.x), s.y.map((v) => (Number.isFinite(v) ? v : null))]);
  const data = tables.length ? uPlot.join(tables) : [[]];
  const options = {
    height,
    legend: { live: true },
    cursor: { drag: { x: true, y: false } },
    scales: { x: { time: false } },
    axes: [
      axis(xLabel, { incrs: kIntegerIncrs }),
      axis(yLabel, yFormat ? { size: 70, values: (u, splits) => splits.map((v) => (v == null ? '' : yFormat(v))) } : { size: 70 }),
    ],
    series: [
      { label: xLabel },
      ...series.map((s) => ({
        label: s.label,
        stroke: s.color,
        width: s.width || 1.5,
        dash: s.dash,
        spanGaps: true,
        points: { show: s.points ?? false, size: 5 },
        value: (u, v) => (v == null ? '\u2014' : v.toFixed(yDigits + 1)),
      })),
    ],
  };
  return mount(container, options, data);
}

// barChart draws grouped bars over named categories: series is a list of
// { label, values: [per category], color }. Returns the uPlot.
export function barChart(container, { categories, series, yLabel, height = 240, yDigits = 4 }) {
  const x = categories.map((_, i) => i);
  const groups = series.length;
  const width = 0.8 / groups;
  const builders = series.map((_, i) => {
    // Two series sit left and right of the category; one sits centred.
    const align = groups === 1 ? 0 : i === 0 ? -1 : 1;
    return uPlot.paths.bars({ size: [width, 64], align, gap: 2 });
  });
  let low = 0;
  let high = 0;
  for (const s of series) {
    for (const v of s.values) {
      if (Number.isFinite(v)) {
        low = Math.min(low, v);
        high = Math.max(high, v);
      }
    }
  }
  const pad = (high - low) * 0.1 || 0.001;
  const options = {
    height,
    legend: { live: false },
    cursor: { show: false },
    scales: {
      x: { time: false, range: [-0.5, categories.length - 0.5] },
      y: { range: [low < 0 ? low - pad : 0, high > 0 ? high + pad : 0] },
    },
    axes: [
      axis('', { splits: () => x, values: (u, splits) => splits.map((i) => categories[i] ?? ''), grid: { show: false } }),
      axis(yLabel, { values: (u, splits) => splits.map((v) => v.toFixed(yDigits)), size: 70 }),
    ],
    series: [
      {},
      ...series.map((s, i) => ({
        label: s.label,
        stroke: s.color,
        fill: `${s.color}cc`,
        width: 1,
        paths: builders[i],
        points: { show: false },
        fillTo: () => 0,
      })),
    ],
  };
  const data = [x, ...series.map((s) => s.values.map((v) => (Number.isFinite(v) ? v : null)))];
  return mount(container, options, data);
}
