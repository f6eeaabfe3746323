package latency

import (
	"fmt"
	"image/color"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PlotFile is the plot's name in the results directory.
const PlotFile = "latency.png"

// floorMs is where the log scale starts: a percentile below it is drawn at it.
const floorMs = 0.01

// Plot draws p50 and p99 per rate for both paths, on a log scale: Hummer's and
// the raw round trip's can be orders of magnitude apart.
func (r *Report) Plot(file string) error {
	p := plot.New()
	p.Title.Text = "End-to-end latency through Kafka (lower is better)"
	p.X.Label.Text = "lines/s"
	p.Y.Label.Text = "ms (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	names := mapRates(r.Setup.Rates, strconv.Itoa)
	blue, grey := color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff}
	for _, c := range []struct {
		path, q string
		col     color.Color
		dashed  bool
	}{
		{PathHummer, "p99", blue, false}, {PathHummer, "p50", blue, true},
		{PathRaw, "p99", grey, false}, {PathRaw, "p50", grey, true},
	} {
		xys := make(plotter.XYs, len(r.Setup.Rates))
		for i, rate := range r.Setup.Rates {
			row := r.row(rate, c.path)
			v := row.P99Ms
			if c.q == "p50" {
				v = row.P50Ms
			}
			xys[i] = plotter.XY{X: float64(i), Y: max(v, floorMs)}
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		line.Color, points.Color = c.col, c.col
		line.Width = vg.Points(1.5)
		points.Shape = draw.CircleGlyph{}
		if c.dashed {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			points.Shape = draw.BoxGlyph{}
		}
		p.Add(line, points)
		p.Legend.Add(fmt.Sprintf("%s %s", c.path, c.q), line, points)
	}
	// The paper's p99, for reference.
	paper, err := plotter.NewLine(plotter.XYs{{X: -0.3, Y: paperP99Ms}, {X: float64(len(names)) - 0.7, Y: paperP99Ms}})
	if err != nil {
		return err
	}
	paper.Color = color.RGBA{0xd6, 0x27, 0x28, 0xff}
	paper.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(paper)
	p.Legend.Add(fmt.Sprintf("the paper's p99 (%g ms)", paperP99Ms), paper)

	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.3, float64(len(names))-0.7
	// Headroom (a decade and a half) above the highest point for the legend, which
	// sits at the top; a log axis needs a positive minimum.
	p.Y.Min, p.Y.Max = max(p.Y.Min/2, floorMs), max(p.Y.Max, paperP99Ms)*30
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), vg.Points(-4)
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)
	return p.Save(7*vg.Inch, 4.5*vg.Inch, file)
}
