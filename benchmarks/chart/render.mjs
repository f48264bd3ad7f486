// Draws the workload comparison as an SVG chart with Vega-Lite: one panel per workload row (each with
// its own scale and unit), one bar per engine. Input: the JSON the workload runner writes next to its
// Markdown report. Usage: node render.mjs <results.json> <chart.svg>
import { readFileSync, writeFileSync } from 'node:fs';
import * as vega from 'vega';
import * as vegaLite from 'vega-lite';

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: node render.mjs <results.json> <chart.svg>');
  process.exit(2);
}
const results = JSON.parse(readFileSync(input, 'utf8'));
const values = results.cells
  .filter((cell) => typeof cell.value === 'number' && Number.isFinite(cell.value))
  .map((cell) => ({ ...cell, panel: `${cell.workload} (${cell.unit})` }));
const panels = [...new Set(values.map((cell) => cell.panel))];

const spec = {
  $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
  title: { text: results.title, subtitle: results.subtitle, anchor: 'start' },
  data: { values },
  facet: { field: 'panel', type: 'nominal', sort: panels, title: null, header: { labelFontSize: 10, labelLimit: 0 } },
  columns: 3,
  spec: {
    width: 240,
    height: 140,
    mark: { type: 'bar', tooltip: true },
    encoding: {
      x: { field: 'engine', type: 'nominal', sort: results.engines, title: null, axis: { labelAngle: 0 } },
      y: { field: 'value', type: 'quantitative', title: null, axis: { format: '~s' } },
      color: { field: 'engine', type: 'nominal', sort: results.engines, legend: { orient: 'top', title: null } },
    },
  },
  resolve: { scale: { y: 'independent' } },
  config: { font: 'sans-serif', view: { stroke: '#ddd' } },
};

const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' });
writeFileSync(output, await view.toSVG());
view.finalize();
console.log(`chart: ${output} (${values.length} bars in ${panels.length} panels)`);
