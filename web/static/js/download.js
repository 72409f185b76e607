// Downloads made in the browser, nothing asked of the coordinator: a
// table as CSV, a plot as SVG (the chart's own SVG, serialised) or PNG (the
// SVG drawn on a canvas at twice its size, or a uPlot's canvas as it is).

import { h } from './dom.js';

// save hands `blob` to the browser as a download named `name`.
export function save(name, blob) {
  const url = URL.createObjectURL(blob);
  const link = h('a', { href: url, download: name, hidden: true });
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

// csvField quotes a value when it holds a comma, a quote or a line break
// (RFC 4180); absent values are empty fields.
function csvField(value) {
  if (value === undefined || value === null) return '';
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

// toCsv renders columns [{ name, value(row) }] over rows, a header first.
export function toCsv(columns, rows) {
  const lines = [columns.map((c) => csvField(c.name)).join(',')];
  for (const row of rows) lines.push(columns.map((c) => csvField(c.value(row))).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

export function saveCsv(name, columns, rows) {
  save(name, new Blob([toCsv(columns, rows)], { type: 'text/csv;charset=utf-8' }));
}

// svgText serialises an <svg> element as a standalone document.
export function svgText(element) {
  const copy = element.cloneNode(true);
  copy.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  const box = element.getBoundingClientRect();
  if (!copy.getAttribute('width')) copy.setAttribute('width', String(Math.round(box.width)));
  if (!copy.getAttribute('height')) copy.setAttribute('height', String(Math.round(box.height)));
  return `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(copy)}`;
}

export function saveSvg(name, element) {
  save(name, new Blob([svgText(element)], { type: 'image/svg+xml' }));
}

// pngBlob draws an <svg> (through a data: image, which the page's
// Content-Security-Policy allows) or copies a <canvas>, on a white ground.
export async function pngBlob(element, scale = 2) {
  let source = element;
  let width = element.width;
  let height = element.height;
  if (element instanceof SVGElement) {
    const box = element.getBoundingClientRect();
    width = Math.round(box.width * scale);
    height = Math.round(box.height * scale);
    const image = new Image();
    image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svgText(element))}`;
    await image.decode();
    source = image;
  }
  const canvas = h('canvas', { width, height });
  const g = canvas.getContext('2d');
  g.fillStyle = '#ffffff';
  g.fillRect(0, 0, width, height);
  g.drawImage(source, 0, 0, width, height);
  return new Promise((resolve, reject) => canvas.toBlob(
    (blob) => (blob ? resolve(blob) : reject(new Error('the plot could not be drawn as PNG'))), 'image/png'));
}

export async function savePng(name, element) {
  save(name, await pngBlob(element));
}

// plotDownloads is the "SVG" / "PNG" button pair under a plot; `find`
// returns the plot's element when clicked: an <svg> (both), or a uPlot's
// canvas (withSvg false: PNG only).
export function plotDownloads(baseName, find, onError, { idPrefix = baseName, withSvg = true } = {}) {
  const guard = (work) => async () => {
    try {
      const el = find();
      if (!el) throw new Error('the plot is not drawn yet');
      await work(el);
    } catch (err) {
      onError(err);
    }
  };
  return h('div', { class: 'plot-downloads' },
           withSvg ? h('button', { type: 'button', class: 'tool-button', id: `${idPrefix}-svg`,
                                   onclick: guard((el) => saveSvg(`${baseName}.svg`, el)) }, 'Download SVG') : null,
           h('button', { type: 'button', class: 'tool-button', id: `${idPrefix}-png`,
                         onclick: guard((el) => savePng(`${baseName}.png`, el)) }, 'Download PNG'));
}
