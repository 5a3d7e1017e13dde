package summarizer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/membus/membus/pkg/lock"
)

// Job names (the jobs table's keys and part of the job locks).
const (
	JobDedup   = "dedup_sweep"
	JobDaily   = "digest_day"
	JobWeekly  = "digest_week"
	JobMonthly = "digest_month"
)

// JobTTL is the lease of one job run; it is refreshed while the run lasts.
const JobTTL = 10 * time.Minute

// job is one scheduled job: a bucket of period is due at `at` on the day the period ends.
type job struct {
	name   string
	period string
	at     time.Duration
	// latestOnly runs only the newest due bucket (the dedup sweep covers everything changed
	// since its watermark, so missed days need no run of their own).
	latestOnly bool
	run        func(ctx context.Context, s Span) (watermark time.Time, err error)
}

// Scheduler runs the summarizer's jobs: cron-style daily times in the configured time zone,
// each (job, bucket) in one replica only (a lease per job and bucket, then a re-read of the
// jobs table under it) and once (the last completed bucket per job is recorded in SQL); on
// start and on every tick it runs every bucket due since the last completed one, at most
// CatchUp back, so runs missed during downtime are caught up.
type Scheduler struct {
	cfg   Config
	d     Deps
	log   *slog.Logger
	jobs  []job
	after func(time.Duration) <-chan time.Time

	runs      func(job, outcome string)
	built     func(period string)
	marked    func(reason string)
	afterSave func(id string) // test hook: called after each digest is stored
}

// NewScheduler builds the scheduler of a summarizer (New builds one; tests build several
// replicas directly). It needs Store, Locker, Metrics; Vectors and Embedder for indexing.
func NewScheduler(cfg Config, d Deps) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.Store == nil || d.Locker == nil || d.Metrics == nil {
		return nil, errors.New("summarizer scheduler: Store, Locker and Metrics are required")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.After == nil {
		d.After = time.After
	}
	if d.KickOutbox == nil {
		d.KickOutbox = func() {}
	}
	if d.Summarizer == nil {
		d.Summarizer = Extractive{}
	}
	sc := &Scheduler{cfg: cfg, d: d, log: d.Logger.With("component", "scheduler"), after: d.After, afterSave: func(string) {}}
	runs := d.Metrics.CounterVec("summarizer_job_runs_total", "Scheduled job runs per job and bucket, by outcome (done, skipped, busy, failed).", "job", "outcome")
	sc.runs = func(j, o string) { runs.WithLabelValues(j, o).Inc() }
	built := d.Metrics.CounterVec("summarizer_digests_built_total", "Digests built, by period.", "period")
	sc.built = func(p string) { built.WithLabelValues(p).Inc() }
	marked := d.Metrics.CounterVec("summarizer_dedup_marked_total", "Memories the dedup sweep marked duplicate_of, by the rule that matched.", "reason")
	sc.marked = func(r string) { marked.WithLabelValues(r).Inc() }
	for _, j := range []struct {
		name, period, at string
		latest           bool
	}{
		{JobDedup, PeriodDay, cfg.DedupAt, true},
		{JobDaily, PeriodDay, cfg.DailyAt, false},
		{JobWeekly, PeriodWeek, cfg.WeeklyAt, false},
		{JobMonthly, PeriodMonth, cfg.MonthlyAt, false},
	} {
		at, _ := parseClock(j.at) // checked by Validate
		jb := job{name: j.name, period: j.period, at: at, latestOnly: j.latest}
		if j.name == JobDedup {
			jb.run = sc.sweep
		} else {
			period := j.period
			jb.run = func(ctx context.Context, s Span) (time.Time, error) { return time.Time{}, sc.digests(ctx, period, s) }
		}
		sc.jobs = append(sc.jobs, jb)
	}
	return sc, nil
}

// Run ticks at once and then every Config.Tick until ctx is done.
func (sc *Scheduler) Run(ctx context.Context) {
	for {
		sc.Tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-sc.after(sc.cfg.Tick):
		}
	}
}

// Tick runs every due bucket of every job not yet completed, oldest first. A job stops at its
// first failed or busy bucket (the next tick retries it), so a bucket is never skipped.
func (sc *Scheduler) Tick(ctx context.Context) {
	now := sc.d.Now()
	for _, j := range sc.jobs {
		if ctx.Err() != nil {
			return
		}
		st, err := sc.d.Store.Job(ctx, j.name)
		if err != nil {
			sc.log.Warn("read job state", "job", j.name, "err", err)
			continue
		}
		for _, s := range sc.due(j, now, st.Bucket) {
			ok, err := sc.runBucket(ctx, j, s)
			if err != nil {
				sc.runs(j.name, "failed")
				sc.log.Warn("scheduled job failed; retried on the next tick", "job", j.name, "bucket", s.Bucket, "err", err)
			}
			if !ok {
				break
			}
		}
	}
}

// due lists the buckets of j due at now and after the last completed one, oldest first, at
// most CatchUp back (only the newest for latestOnly jobs).
func (sc *Scheduler) due(j job, now time.Time, last string) []Span {
	s, err := BucketOf(j.period, now, sc.cfg.Location)
	if err != nil {
		return nil
	}
	for dueAt(s, j.at).After(now) {
		s = s.prev()
	}
	oldest := now.Add(-sc.cfg.CatchUp)
	var out []Span
	for s.Bucket > last && !s.End.Before(oldest) {
		out = append([]Span{s}, out...)
		if j.latestOnly {
			break
		}
		s = s.prev()
	}
	return out
}

// runBucket runs one bucket of a job in this replica if no other replica runs or ran it. It
// reports whether the job may go on with its next bucket (false: busy or failed).
func (sc *Scheduler) runBucket(ctx context.Context, j job, s Span) (bool, error) {
	lease, err := sc.d.Locker.Acquire(ctx, jobKey(j.name, s.Bucket), JobTTL)
	if errors.Is(err, lock.ErrBusy) {
		sc.runs(j.name, "busy")
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer lock.Release(context.WithoutCancel(ctx), lease, sc.log)
	ctx = lease.Context()
	// Re-read under the lease: another replica may have completed it since this tick began.
	st, err := sc.d.Store.Job(ctx, j.name)
	if err != nil {
		return false, err
	}
	if st.Bucket >= s.Bucket {
		sc.runs(j.name, "skipped")
		return true, nil
	}
	wm, err := j.run(ctx, s)
	if err != nil {
		return false, fmt.Errorf("%s %s: %w", j.name, s.Bucket, err)
	}
	if err := sc.d.Store.CompleteJob(ctx, j.name, s.Bucket, wm); err != nil {
		return false, err
	}
	sc.runs(j.name, "done")
	// Debug: a first start catches up a month of daily buckets, and membus_summarizer_job_runs_total
	// counts every run for operators.
	sc.log.Debug("scheduled job done", "job", j.name, "bucket", s.Bucket)
	return true, nil
}

func jobKey(name, bucket string) string { return "lock:job:" + name + ":" + bucket }
