package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hummer-db/hummer/exec/jobmanager"
)

// progress draws `hummer sql`'s progress line on a terminal while a statement
// runs: the bytes its file sources read of their total, the rows read and
// written so far, and the time; it appears once a statement has run for a
// second and is wiped before its result is printed. Nothing is drawn unless
// both standard error, where the line goes, and standard output, where the
// result goes, are terminals: a result written to a file or a pipe is a
// script's, whose terminal should not fill with progress.
type progress struct {
	w       io.Writer
	jm      *jobmanager.JobManager
	rowsOut atomic.Int64 // rows of the result printed so far
	stop    chan struct{}
	once    sync.Once
	done    sync.WaitGroup
	drawn   bool // a line is on the screen. Only the drawing goroutine, then stopAndWipe, touch it.
}

// progressDelay is how long a statement runs before its progress shows.
const progressDelay = time.Second

// startProgress starts drawing the progress of the jobs jm runs on w, when w
// and out, where the result is printed, are terminals; it returns nil (whose
// methods do nothing) otherwise.
func startProgress(w *os.File, out io.Writer, jm *jobmanager.JobManager) *progress {
	if !isTerminal(w) || !isTerminal(out) {
		return nil
	}
	p := &progress{w: w, jm: jm, stop: make(chan struct{})}
	p.done.Add(1)
	go p.run(time.Now())
	return p
}

func (p *progress) run(start time.Time) {
	defer p.done.Done()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-tick.C:
			if now.Sub(start) < progressDelay {
				continue
			}
			read, total, rowsIn := sourceProgress(p.jm)
			fmt.Fprintf(p.w, "\r%s\x1b[K", progressLine(read, total, rowsIn, p.rowsOut.Load(), now.Sub(start)))
			p.drawn = true
		}
	}
}

// addRows counts rows of the result as they arrive.
func (p *progress) addRows(n int64) {
	if p != nil {
		p.rowsOut.Add(n)
	}
}

// stopAndWipe stops drawing and clears the line, before the result is
// printed; calls after the first do nothing.
func (p *progress) stopAndWipe() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		close(p.stop)
		p.done.Wait()
		if p.drawn {
			fmt.Fprint(p.w, "\r\x1b[K")
		}
	})
}

// sourceProgress sums, over the running jobs (a `hummer sql` engine runs the
// script's), what their file sources read of their total and the rows their
// sources read.
func sourceProgress(jm *jobmanager.JobManager) (read, total, rowsIn int64) {
	for _, j := range jm.Jobs() {
		if j.State() != jobmanager.JobRunning {
			continue
		}
		g := j.Current()
		for id, m := range j.Metrics() {
			read += m.SourceBytes.Load()
			total += m.SourceTotal.Load()
			if g != nil && g.Job.Vertices[id.Vertex].IsSource() {
				rowsIn += m.RowsIn.Load()
			}
		}
	}
	return read, total, rowsIn
}

// progressLine renders one progress line: a bar of the bytes read when the
// sources know their total, else only the counts.
func progressLine(read, total, rowsIn, rowsOut int64, elapsed time.Duration) string {
	const width = 30
	var b strings.Builder
	if total > 0 {
		frac := min(float64(read)/float64(total), 1)
		full := int(frac * width)
		fmt.Fprintf(&b, "[%s%s] %3.0f%% %s of %s  ", strings.Repeat("#", full), strings.Repeat(".", width-full),
			100*frac, byteSize(min(read, total)), byteSize(total))
	}
	fmt.Fprintf(&b, "%d rows read, %d rows out, %s", rowsIn, rowsOut, elapsed.Truncate(100*time.Millisecond))
	return b.String()
}

// byteSize is n bytes in binary units, as psql's pg_size_pretty words them.
func byteSize(n int64) string {
	units := []string{"bytes", "kB", "MB", "GB", "TB"}
	f, u := float64(n), 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f %s", f, units[u])
}

// isTerminal says whether w is a terminal: a file that is a character device
// (/dev/null is one too).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
