package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
)

// plotFile is the plot's name in the results directory.
const plotFile = "wordcount.png"

// palette colours the input sizes and the TPC-H contenders: blue, orange,
// grey, green, red, purple.
var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff},
	color.RGBA{0xff, 0x7f, 0x0e, 0xff},
	color.RGBA{0x7f, 0x7f, 0x7f, 0xff},
	color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff},
	color.RGBA{0x94, 0x67, 0xbd, 0xff},
}

// plotThroughput draws grouped bars: MB/s per contender, one bar per input size,
// each labelled with its value.
func plotThroughput(r *report, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("WordCount throughput, median of %d runs (higher is better)", r.Reps)
	p.Y.Label.Text = "MB/s"
	p.Y.Min = 0
	names := make([]string, len(r.Contenders))
	for i, c := range r.Contenders {
		names[i] = c.Name
	}
	width := vg.Points(22)
	for k, in := range r.Inputs {
		vals := make(plotter.Values, len(names))
		labels := plotter.XYLabels{XYs: make(plotter.XYs, len(names)), Labels: make([]string, len(names))}
		for i, name := range names {
			v := r.row(name, in.Copies).MBPerS
			vals[i] = v
			labels.XYs[i] = plotter.XY{X: float64(i), Y: v}
			labels.Labels[i] = fmt.Sprintf("%.0f", v)
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return err
		}
		offset := width * vg.Length(float64(k)-float64(len(r.Inputs)-1)/2)
		bars.Offset = offset
		bars.LineStyle.Width = 0
		bars.Color = palette[k%len(palette)]
		lab, err := plotter.NewLabels(labels)
		if err != nil {
			return err
		}
		lab.Offset = vg.Point{X: offset, Y: vg.Points(2)}
		for i := range lab.TextStyle {
			lab.TextStyle[i].XAlign = text.XCenter
			lab.TextStyle[i].Font.Size = vg.Points(8)
		}
		p.Add(bars, lab)
		p.Legend.Add(fmt.Sprintf("%d x kjv.txt (%.0f MB)", in.Copies, float64(in.Bytes)/1e6), bars)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), vg.Points(-4)
	p.NominalX(names...)
	// Bars are offset in drawing units, which the axes do not know of: widen the
	// X range so the outer bars are not cut, and leave headroom for the legend.
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.Y.Max *= 1.25
	p.Y.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
		ticks := plot.DefaultTicks{}.Ticks(min, max)
		for i := range ticks {
			if ticks[i].Label != "" {
				ticks[i].Label = fmt.Sprintf("%.0f", ticks[i].Value)
			}
		}
		return ticks
	})
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)
	return p.Save(11*vg.Inch, 4.5*vg.Inch, path)
}

// plotTPCH draws each query's median time per contender, on a log scale
// (a failed query has no bar). The bars stand on an unplotted base of 1 ms,
// as a log scale has no zero to start them from.
func plotTPCH(r *tpchReport, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("TPC-H at scale factor %v, median of %d runs (lower is better)", r.ScaleFactor, r.Reps)
	p.Y.Label.Text = "seconds (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	width := vg.Points(5)
	const floor = 0.001
	for k, c := range r.Contenders {
		vals := make(plotter.Values, len(r.Summary))
		base := make(plotter.Values, len(r.Summary))
		for i, s := range r.Summary {
			base[i] = floor
			if s.Right[c.Name] && s.WallS[c.Name] > floor {
				vals[i] = s.WallS[c.Name] - floor
			}
		}
		under, err := plotter.NewBarChart(base, width)
		if err != nil {
			return err
		}
		under.Offset = width * vg.Length(float64(k)-float64(len(r.Contenders)-1)/2)
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return err
		}
		bars.StackOn(under)
		bars.LineStyle.Width = 0
		bars.Color = palette[k%len(palette)]
		p.Add(bars)
		p.Legend.Add(c.Name, bars)
	}
	names := make([]string, len(r.Summary))
	for i, s := range r.Summary {
		names[i] = s.Query
	}
	p.NominalX(names...)
	p.Legend.Top, p.Legend.Left = true, true
	return p.Save(30*vg.Centimeter, 12*vg.Centimeter, path)
}
