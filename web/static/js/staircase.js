// The schedule glyph: one column per layer, its height the layer's head
// count on a log scale, so `3x3,6x3,12x6` reads as a rising staircase. A
// tiny per-row sparkline drawn straight on a canvas (the real charts use
// uPlot).

import { h } from './dom.js';

// parseSchedule expands canonical "HEADSxLAYERS,..." into per-layer heads;
// returns [] when the text is not canonical.
export function parseSchedule(text) {
  const heads = [];
  for (const block of String(text || '').split(',')) {
    const match = /^(\d+)x(\d+)$/.exec(block.trim());
    if (!match) return [];
    for (let i = 0; i < Number(match[2]); i += 1) heads.push(Number(match[1]));
  }
  return heads;
}

export function layerHeads(principles, schedule) {
  const heads = principles && Array.isArray(principles.heads) ? principles.heads.map(Number) : [];
  return heads.length ? heads : parseSchedule(schedule);
}

export function staircase(heads, { width = 96, height = 28, label = '' } = {}) {
  const ratio = window.devicePixelRatio || 1;
  const canvas = h('canvas', {
    class: 'staircase',
    width: Math.round(width * ratio),
    height: Math.round(height * ratio),
    style: { width: `${width}px`, height: `${height}px` },
    role: 'img',
    'aria-label': label || `head schedule: ${heads.join(' ')}`,
    title: label || heads.join(' '),
  });
  if (!heads.length) return canvas;
  const ctx = canvas.getContext('2d');
  ctx.scale(ratio, ratio);
  const maxHeads = Math.max(...heads);
  const top = Math.log2(maxHeads) + 1;
  const column = width / heads.length;
  const gap = column > 4 ? 1 : 0;
  for (let i = 0; i < heads.length; i += 1) {
    const level = (Math.log2(heads[i]) + 1) / top;
    const barHeight = Math.max(2, Math.round(level * (height - 2)));
    ctx.fillStyle = heads[i] === maxHeads ? '#94a3b8' : '#4f46e5';
    ctx.fillRect(i * column, height - barHeight, column - gap, barHeight);
  }
  return canvas;
}
