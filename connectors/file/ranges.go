package file

import "sync"

// Pieces a rangeQueue hands out: about the bytes left over twice the number of
// subtasks reading, so that each subtask takes a few pieces early on and small
// ones near the end, within these bounds. A piece of 64 KiB is about a quarter
// of a millisecond of WordCount on one core, which bounds how far apart the
// subtasks finish (256 KiB left them 0.42 ms apart on average at parallelism 2,
// 64 KiB 0.14 ms); each piece costs a reader reset and the skip of the line it
// starts in, and only the last few pieces are that small.
const (
	minPiece = 64 << 10
	maxPiece = 4 << 20
)

// rangeQueue is the byte ranges of the subtasks of one file source that run in
// one TaskManager (exec.Colocated), handed out piece by piece to whichever of
// them asks: a subtask whose core is busy with something else reads less, and
// the subtasks finish together. Each subtask adds its own range when it opens
// and reads pieces until the queue is empty, so every range is read whether or
// not the others have started or already finished.
//
// A piece (start, end] holds the lines that start in it (plus the line at 0 for
// the piece that starts the file), as a subtask's range does, so the pieces of a
// range read exactly its lines.
//
// Only jobs without checkpoints share ranges: a checkpoint holds each subtask's
// position in its own range.
type rangeQueue struct {
	minPiece, maxPiece int64 // bounds of a piece's size, but for a range's last

	mu       sync.Mutex
	ranges   [][2]int64 // not yet handed out, in the order added
	left     int64      // bytes in ranges
	subtasks int        // subtasks that added a range
}

func newRangeQueue() *rangeQueue { return &rangeQueue{minPiece: minPiece, maxPiece: maxPiece} }

// add queues the range (start, end] of a subtask that will then take pieces.
func (q *rangeQueue) add(start, end int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.subtasks++
	if end > start {
		q.ranges = append(q.ranges, [2]int64{start, end})
		q.left += end - start
	}
}

// take returns the next piece, or ok=false when none is left.
func (q *rangeQueue) take() (start, end int64, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.ranges) == 0 {
		return 0, 0, false
	}
	piece := min(max(q.left/int64(2*q.subtasks), q.minPiece), q.maxPiece)
	r := &q.ranges[0]
	start, end = r[0], min(r[0]+piece, r[1])
	if r[1]-end < q.minPiece/2 { // no sliver left behind
		end = r[1]
	}
	r[0] = end
	if r[0] == r[1] {
		q.ranges = q.ranges[1:]
	}
	q.left -= end - start
	return start, end, true
}
