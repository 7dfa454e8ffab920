// A small SVG line chart rendered to PNG (resvg): prompt size and cache reuse over the turns.
import { writeFileSync } from "node:fs";
import { Resvg } from "@resvg/resvg-js";

export interface Series {
  name: string;
  color: string;
  values: number[];
}

interface Panel {
  title: string;
  unit: string;
  series: Series[];
  max?: number;
}

function panel(p: Panel, x0: number, y0: number, width: number, height: number): string {
  const max = p.max ?? Math.max(1, ...p.series.flatMap((s) => s.values));
  const n = Math.max(...p.series.map((s) => s.values.length));
  const px = (i: number) => x0 + (i / Math.max(1, n - 1)) * width;
  const py = (v: number) => y0 + height - (v / max) * height;
  const parts = [
    `<text x="${x0}" y="${y0 - 10}" font-size="15" font-family="DejaVu Sans" font-weight="bold">${p.title}</text>`,
    `<rect x="${x0}" y="${y0}" width="${width}" height="${height}" fill="none" stroke="#999"/>`,
  ];
  for (let k = 0; k <= 4; k++) {
    const v = (max * k) / 4;
    parts.push(
      `<line x1="${x0}" x2="${x0 + width}" y1="${py(v)}" y2="${py(v)}" stroke="#eee"/>`,
      `<text x="${x0 - 6}" y="${py(v) + 4}" font-size="11" text-anchor="end" font-family="DejaVu Sans">${Math.round(v)}${p.unit}</text>`,
    );
  }
  parts.push(
    `<text x="${x0 + width}" y="${y0 + height + 15}" font-size="12" text-anchor="end" font-family="DejaVu Sans">turn (messages), 0 to ${n}</text>`,
  );
  let legendX = x0;
  p.series.forEach((s) => {
    const step = Math.max(1, Math.floor(s.values.length / 1500));
    const points: string[] = [];
    for (let i = 0; i < s.values.length; i += step)
      points.push(`${px(i).toFixed(1)},${py(s.values[i] ?? 0).toFixed(1)}`);
    parts.push(
      `<polyline fill="none" stroke="${s.color}" stroke-width="1.5" points="${points.join(" ")}"/>`,
    );
    // Below the axis label, not over the lines it names; each entry as wide as its name.
    parts.push(
      `<rect x="${legendX}" y="${y0 + height + 26}" width="12" height="12" fill="${s.color}"/>`,
      `<text x="${legendX + 18}" y="${y0 + height + 36}" font-size="12" font-family="DejaVu Sans">${s.name}</text>`,
    );
    legendX += 40 + s.name.length * 7;
  });
  return parts.join("\n");
}

export function renderChart(file: string, panels: Panel[]): void {
  const width = 1000;
  const panelHeight = 260;
  const height = panels.length * (panelHeight + 100) + 20;
  const body = panels
    .map((p, i) => panel(p, 80, 50 + i * (panelHeight + 100), width - 120, panelHeight))
    .join("\n");
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="white"/>${body}</svg>`;
  const png = new Resvg(svg, { font: { loadSystemFonts: true, defaultFontFamily: "DejaVu Sans" } })
    .render()
    .asPng();
  writeFileSync(file, png);
}
