// Owns the time-series panels (usage per hour, activity over 15 minutes): uPlot, a small
// canvas chart library, sized to its container, with the hovered values in its legend. Each
// chart has a text title and the page offers the same figures as a table, since a canvas
// says nothing to a screen reader.

import { useEffect, useRef } from 'react';
import uPlot, { type AlignedData, type Options } from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface SeriesSpec {
  label: string;
  color: string;
  /** Steps (replica counts) rather than lines. */
  stepped?: boolean;
  bars?: boolean;
}

interface ChartProps {
  title: string;
  /** Unix seconds. */
  x: number[];
  series: Array<SeriesSpec & { values: Array<number | null> }>;
  height?: number;
  yLabel?: string;
  /** A fixed time range in Unix seconds (a window that has only begun to fill still spans it). */
  xRange?: [number, number];
}

export function Chart({ title, x, series, height = 180, yLabel, xRange }: ChartProps) {
  const range = useRef(xRange);
  range.current = xRange;
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = series.map((s) => `${s.label}:${s.stepped ? 's' : ''}${s.bars ? 'b' : ''}`).join('|');

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: Options = {
      width: Math.max(200, el.clientWidth),
      height,
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true, range: (_u, min, max) => range.current ?? [min, max] }, y: { range: (_u, min, max) => [Math.min(0, min), Math.max(1, max * 1.1)] } },
      axes: [
        { stroke: 'currentColor', grid: { stroke: 'rgba(128,128,128,.15)' } },
        { stroke: 'currentColor', grid: { stroke: 'rgba(128,128,128,.15)' }, ...(yLabel ? { label: yLabel } : {}) },
      ],
      series: [
        {},
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 2,
          ...(s.bars ? { fill: `${s.color}55`, paths: uPlot.paths.bars!({ size: [0.6, 40] }) } : {}),
          ...(s.stepped ? { paths: uPlot.paths.stepped!({ align: 1 }) } : {}),
        })),
      ],
    };
    const u = new uPlot(opts, [x, ...series.map((s) => s.values)] as AlignedData, el);
    plot.current = u;
    const resize = new ResizeObserver(() => u.setSize({ width: Math.max(200, el.clientWidth), height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      plot.current = null;
    };
    // The plot is rebuilt only when the series change shape (x, series and xRange are read
    // through refs or setData): new data goes through setData below.
  }, [shape, height, yLabel]);

  useEffect(() => {
    plot.current?.setData([x, ...series.map((s) => s.values)] as AlignedData);
  });

  return (
    <figure className="chart" aria-label={title}>
      <figcaption className="chart-title">{title}</figcaption>
      <div ref={box} />
    </figure>
  );
}
