package session

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/sql"
)

// views are the engine's materialised views: each has a job whose result rows
// (changes, for a continuous query) keep its exec.ViewState, which queries over
// the view read as a snapshot taken when they are planned.
type views struct {
	mu sync.Mutex
	m  map[string]*view // by name
}

type view struct {
	state *exec.ViewState
	job   *exec.Job
}

// createView adds the view to the catalog and starts its job.
func (s *Session) createView(st *sql.CreateView, text string) (*Result, error) {
	if err := s.e.catalog.Create(st.View, false); err != nil {
		return nil, err
	}
	job, err := s.startView(st.View, st.Query, text)
	if err != nil {
		s.e.catalog.Drop(st.View.Name, true)
		return nil, err
	}
	return &Result{Tag: "CREATE VIEW", Notices: []string{
		fmt.Sprintf("job %s keeps view %s; SHOW PROCESSLIST shows it, DROP VIEW %s stops it", job.ID, st.View.Name, st.View.Name),
	}}, nil
}

// startView submits the job that keeps view t, the result of q.
func (s *Session) startView(t *sql.Table, q *sql.Query, text string) (*exec.Job, error) {
	_, jg, err := s.plan(q)
	if err != nil {
		return nil, err
	}
	state := exec.NewViewState(q.Plan.Schema())
	job, err := s.e.jm.Submit(text, jg, state)
	if err != nil {
		return nil, err
	}
	s.e.views.mu.Lock()
	defer s.e.views.mu.Unlock()
	if s.e.views.m == nil {
		s.e.views.m = map[string]*view{}
	}
	s.e.views.m[t.Name] = &view{state: state, job: job}
	return job, nil
}

// restartViews starts the jobs of the views in the catalog, after a restart:
// they begin again from their sources' start (or the offsets their Kafka
// consumer groups committed). A cluster's TaskManagers may not have registered
// yet: views that find no slots are retried every second until they start or
// the engine closes. A view whose query no longer binds (a table it read was
// dropped) stays in the catalog without a job, and reading it says so.
func (e *Engine) restartViews() {
	var waiting []*sql.Table
	for _, t := range e.catalog.Tables() {
		if !t.IsView() {
			continue
		}
		if err := e.restartView(t); errors.Is(err, exec.ErrNoSlots) {
			waiting = append(waiting, t)
		} else if err != nil {
			e.cfg.Log.Error("view not restarted", "view", t.Name, "err", err)
		}
	}
	if len(waiting) == 0 {
		return
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for len(waiting) > 0 {
			select {
			case <-e.closing:
				return
			case <-tick.C:
			}
			var still []*sql.Table
			for _, t := range waiting {
				if err := e.restartView(t); errors.Is(err, exec.ErrNoSlots) {
					still = append(still, t)
				} else if err != nil {
					e.cfg.Log.Error("view not restarted", "view", t.Name, "err", err)
				}
			}
			waiting = still
		}
	}()
}

// restartView binds view t's query again and starts its job, unless the view
// was dropped meanwhile.
func (e *Engine) restartView(t *sql.Table) error {
	if cur, ok := e.catalog.Table(t.Name); !ok || cur != t {
		return nil
	}
	stmts, err := sql.Parse(t.Query)
	if err != nil {
		return err
	}
	if len(stmts) != 1 {
		return fmt.Errorf("view query has %d statements", len(stmts))
	}
	st, err := sql.Bind(stmts[0], e.catalog, t.Query)
	if err != nil {
		return err
	}
	q, ok := st.(*sql.Query)
	if !ok {
		return fmt.Errorf("view query is not a SELECT")
	}
	_, err = e.NewSession().startView(t, q, "CREATE VIEW "+t.Name+" AS "+t.Query)
	return err
}

// snapshot returns the rows of view name now (planner.Options.Snapshot).
func (e *Engine) snapshot(name string) ([]byte, error) {
	e.views.mu.Lock()
	v, ok := e.views.m[name]
	e.views.mu.Unlock()
	if !ok {
		return nil, sql.Errorf(sql.ErrUnsupported, 0, "view %s has no job keeping it (its query failed to start after a restart: see the log); DROP VIEW %s and create it again", name, name)
	}
	select {
	case <-v.job.Done():
		if err := v.job.Err(); err != nil {
			return nil, fmt.Errorf("view %s: its job failed: %w", name, err)
		}
	default:
	}
	return v.state.Snapshot()
}

// dropViews stops the views' jobs and removes them from the catalog.
func (s *Session) dropViews(st *sql.DropView) (*Result, error) {
	if err := s.e.catalog.DropTables(st.Names, st.IfExists); err != nil {
		return nil, err
	}
	for _, name := range st.Names {
		s.e.views.mu.Lock()
		v, ok := s.e.views.m[name]
		delete(s.e.views.m, name)
		s.e.views.mu.Unlock()
		if ok {
			v.job.Cancel(fmt.Errorf("%w: DROP VIEW %s", exec.ErrJobCancelled, name))
			<-v.job.Done()
		}
	}
	return &Result{Tag: "DROP VIEW"}, nil
}
