package operators

import (
	"context"

	"github.com/hummer-db/hummer/exec"
)

// twoInputs tracks the signals of a two-input operator (join, union): which
// inputs have ended, and the watermark it forwards, the minimum over the
// inputs still running (an input that has ended holds none back).
type twoInputs struct {
	ended  [2]bool
	idle   [2]bool // holds no watermark back until its next one
	wm     [2]int64
	wmSeen [2]bool
	wmOut  int64
	wmSent bool
	// delay holds the forwarded watermark back (an interval join's).
	delay int64
}

// end records that input ended: ended is whether both now have; first
// whether this input's end is news (a repeated one is ignored).
func (t *twoInputs) end(input int) (first, ended bool) {
	if t.ended[input] {
		return false, t.ended[0] && t.ended[1]
	}
	t.ended[input] = true
	return true, t.ended[0] && t.ended[1]
}

// watermark records input's watermark and forwards the minimum if it advanced.
func (t *twoInputs) watermark(ctx context.Context, input int, wm int64, out exec.Collector) error {
	t.record(input, wm)
	return t.forward(ctx, out)
}

// record records input's watermark, without forwarding.
func (t *twoInputs) record(input int, wm int64) {
	if !t.wmSeen[input] || wm > t.wm[input] {
		t.wm[input], t.wmSeen[input] = wm, true
	}
	t.idle[input] = false
}

// idleInput records that input is idle: the other one's watermark goes on
// alone; both idle, downstream hears so.
func (t *twoInputs) idleInput(ctx context.Context, input int, out exec.Collector) error {
	t.idle[input] = true
	if (t.idle[0] || t.ended[0]) && (t.idle[1] || t.ended[1]) {
		return out.CollectSignal(ctx, exec.Signal{Kind: exec.Idle})
	}
	return t.forward(ctx, out)
}

// forward sends the minimum watermark of the running inputs when it advances.
func (t *twoInputs) forward(ctx context.Context, out exec.Collector) error {
	var wm int64
	have := false
	for i := range 2 {
		if t.ended[i] || t.idle[i] {
			continue
		}
		if !t.wmSeen[i] {
			return nil
		}
		if !have || t.wm[i] < wm {
			wm, have = t.wm[i], true
		}
	}
	if have {
		wm = satAdd(wm, -t.delay)
	}
	if !have || (t.wmSent && wm <= t.wmOut) {
		return nil
	}
	t.wmOut, t.wmSent = wm, true
	return out.CollectSignal(ctx, exec.Signal{Kind: exec.Watermark, Watermark: wm})
}
