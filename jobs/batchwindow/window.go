package batchwindow

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/lsm"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// Job names of the scheduler catalogue this package provides bodies for.
const (
	JobBulk     = "bulk-window"
	JobDeferred = "deferred-window"
)

// Lanes whose transfers wait for a window.
const (
	LaneBulk     = "BULK"
	LaneDeferred = "DEFERRED"
)

// Acceptor continues a transfer whose H the window reserved: the
// orchestrator, which moves it along its lane (checks, bank hold, decision,
// execution) with the lane primitives. It runs inside the window's
// transaction and must only write rows of its own (its work queue); an
// error rolls the whole window back.
type Acceptor interface {
	AcceptBatchInTx(ctx context.Context, tx *store.Tx, txid string) error
}

// ReservationID is the id of the H reservation a window makes for txid.
// The orchestrator reserves H under the same id ("H-<txid>") when it
// reaches the transfer's reserve step, so its ReserveH is a replay of the
// window's reservation (hlimit: same id and request => no second charge).
func ReservationID(txid string) string { return "H-" + txid }

// Config wires a Window.
type Config struct {
	FinalityLog *finality.Log     // the log LsmRunCommitted/LsmRunFallback go to (nil: finality.New(clock))
	Gate        lane.WritableGate // required (sysmode.Gate{})
	Acceptor    Acceptor          // required
	Clock       clock.Clock       // nil: clock.System{}
	Logger      *slog.Logger      // nil: discard
	LSM         lsm.Options       // optimizer budget and fallback mode
	// DueHorizon per lane: a candidate due within this much of the close
	// is urgent (it would be late in the next window). Defaults: BULK 2h
	// (the default windows are 2 hours apart), DEFERRED 24h.
	BulkHorizon, DeferredHorizon time.Duration
	// FairnessAge: a candidate that has waited this long is served before
	// younger ones (default 2h: it already missed a window).
	FairnessAge time.Duration
	// ThrottlePerPayer caps each payer in the THROTTLE fallback (default 100).
	ThrottlePerPayer int
}

// Window runs batch windows.
type Window struct {
	cfg Config
	h   *hlimit.H
	log *slog.Logger
}

// New returns a Window.
func New(cfg Config) (*Window, error) {
	if cfg.Gate == nil || cfg.Acceptor == nil {
		return nil, fmt.Errorf("batchwindow: Gate and Acceptor are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.FinalityLog == nil {
		cfg.FinalityLog = finality.New(cfg.Clock)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.BulkHorizon <= 0 {
		cfg.BulkHorizon = 2 * time.Hour
	}
	if cfg.DeferredHorizon <= 0 {
		cfg.DeferredHorizon = 24 * time.Hour
	}
	if cfg.FairnessAge <= 0 {
		cfg.FairnessAge = 2 * time.Hour
	}
	if cfg.ThrottlePerPayer <= 0 {
		cfg.ThrottlePerPayer = 100
	}
	return &Window{cfg: cfg, h: hlimit.New(cfg.Clock, cfg.Logger), log: cfg.Logger}, nil
}

// Report is what one window did.
type Report struct {
	WindowID string
	Run      lsm.Run
	Accepted []string // H reserved and handed to the orchestrator, in commit order
	HRefused []string // proposed but refused by the H commit (deferred)
	Deferred []string // not proposed (deferred)
}

// Summary is the job step's one-line summary.
func (r Report) Summary() string {
	s := fmt.Sprintf("%s: %d candidates, %d accepted, %d deferred (%s", r.WindowID, r.Run.CandidateCount,
		len(r.Accepted), r.Run.DeferredCount, r.Run.Mode)
	if r.Run.IsFallback {
		s += ", degraded"
	}
	return s + ")"
}

// WindowID names a window: LANE-YYYYMMDD[-HHMM][-rerun-N] from the lane,
// the JST business date and the job ledger's run key.
func WindowID(laneName, businessDate, runKey string) string {
	id := laneName + "-" + strings.ReplaceAll(businessDate, "-", "")
	if runKey != "" && runKey != "daily" {
		id += "-" + strings.NewReplacer(":", "", "/", "-").Replace(runKey)
	}
	return id
}

// CloseInstant is the instant a window closes: for a repeating job the
// slot's JST minute on the business date; for a daily job now, but no later
// than the end of the business date (a caught-up date takes only what
// arrived that day).
func CloseInstant(businessDate, runKey string, now time.Time) (time.Time, error) {
	d, err := clock.ParseBusinessDate(businessDate)
	if err != nil {
		return time.Time{}, domainerr.New("INVALID_REQUEST", "business_date must be YYYY-MM-DD", map[string]any{"business_date": businessDate})
	}
	day := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, clock.JST)
	slot, _, _ := strings.Cut(runKey, "/")
	if slot != "" && slot != "daily" {
		t, err := time.ParseInLocation("15:04", slot, clock.JST)
		if err != nil {
			return time.Time{}, domainerr.New("INVALID_REQUEST", "window slot must be HH:MM", map[string]any{"run_key": runKey})
		}
		return day.Add(time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute), nil
	}
	end := day.Add(24*time.Hour - time.Nanosecond)
	if now.After(end) {
		return end, nil
	}
	return now, nil
}

// RunInTx runs one window of laneName inside the caller's write
// transaction: snapshot, plan, H commit, hand-over, LsmRuns record. A
// window id that already ran is ALREADY_PROCESSED (and nothing is written).
func (w *Window) RunInTx(ctx context.Context, tx *store.Tx, laneName, businessDate, windowID string, closeAt time.Time) (Report, error) {
	if err := w.cfg.Gate.CheckWritable(ctx, tx); err != nil {
		return Report{}, err
	}
	var ran int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM LsmRuns WHERE run_id = ?`, lsm.RunID(windowID)).Scan(&ran); err != nil {
		return Report{}, fmt.Errorf("batchwindow: look up %s: %w", windowID, err)
	}
	if ran > 0 {
		return Report{}, domainerr.New("ALREADY_PROCESSED", "this LSM window already ran", map[string]any{"window_id": windowID})
	}
	horizon := w.cfg.BulkHorizon
	if laneName == LaneDeferred {
		horizon = w.cfg.DeferredHorizon
	}
	in, err := w.snapshot(ctx, tx, laneName, windowID, closeAt, horizon)
	if err != nil {
		return Report{}, err
	}
	res, err := lsm.Plan(in, w.cfg.LSM)
	if err != nil {
		return Report{}, err
	}
	byID := map[string]lsm.Candidate{}
	for _, c := range in.Candidates {
		byID[c.TxID] = c
	}
	rep := Report{WindowID: windowID, Deferred: res.Deferred}
	for _, id := range res.Selected {
		c := byID[id]
		r, err := w.h.ReserveH(ctx, tx, hlimit.ReserveRequest{ReservationID: ReservationID(id), TxID: id,
			BankID: c.PayerBankID, Currency: c.Currency, Amount: c.Amount})
		if domainerr.Has(err, "H_LIMIT_EXCEEDED") {
			rep.HRefused = append(rep.HRefused, id)
			continue
		}
		if err != nil {
			return Report{}, fmt.Errorf("batchwindow: reserve H for %s: %w", id, err)
		}
		if r.Released {
			// The id was reserved and released before while the transfer
			// stayed RECEIVED: the replay would hold no H, so it is not
			// an acceptance. Deferred, and reported.
			w.log.WarnContext(ctx, "lsm.reservation_already_released", "window_id", windowID, "txid", id, "reservation_id", r.ID)
			rep.HRefused = append(rep.HRefused, id)
			continue
		}
		if err := w.cfg.Acceptor.AcceptBatchInTx(ctx, tx, id); err != nil {
			return Report{}, fmt.Errorf("batchwindow: hand %s to the orchestrator: %w", id, err)
		}
		rep.Accepted = append(rep.Accepted, id)
	}
	rep.Run, err = lsm.Record(ctx, tx, w.cfg.FinalityLog, w.cfg.Clock, businessDate, in, res, lsm.Outcome{Accepted: rep.Accepted, HRefused: rep.HRefused})
	if err != nil {
		return Report{}, err
	}
	lvl := slog.LevelInfo
	if rep.Run.IsFallback {
		lvl = slog.LevelWarn // degraded: operators are told (001 §14.3)
	}
	w.log.Log(ctx, lvl, "lsm.window_closed", "window_id", windowID, "mode", string(rep.Run.Mode), "degraded", rep.Run.IsFallback,
		"candidates", rep.Run.CandidateCount, "accepted", len(rep.Accepted), "h_refused", len(rep.HRefused),
		"deferred", rep.Run.DeferredCount, "execution_set_hash", rep.Run.ExecutionSetHash)
	return rep, nil
}

// snapshot reads the candidates and constraints at the close.
func (w *Window) snapshot(ctx context.Context, tx *store.Tx, laneName, windowID string, closeAt time.Time, horizon time.Duration) (lsm.Input, error) {
	rows, err := tx.QueryContext(ctx, `SELECT t.txid, t.payer_bank_id, t.payee_bank_id, t.amount_value, t.amount_currency,
		t.created_at, COALESCE(t.expires_at, '') FROM Transactions t
		WHERE t.lane = ? AND t.state = 'RECEIVED' AND t.owner = 'ZC'
		  AND NOT EXISTS (SELECT 1 FROM HReservations h WHERE h.txid = t.txid AND h.is_released = 0)
		ORDER BY t.txid`, laneName)
	if err != nil {
		return lsm.Input{}, fmt.Errorf("batchwindow: snapshot %s: %w", windowID, err)
	}
	var cands []lsm.Candidate
	for rows.Next() {
		var c lsm.Candidate
		if err := rows.Scan(&c.TxID, &c.PayerBankID, &c.PayeeBankID, &c.Amount, &c.Currency, &c.ArrivedAt, &c.DueAt); err != nil {
			rows.Close()
			return lsm.Input{}, fmt.Errorf("batchwindow: snapshot %s: %w", windowID, err)
		}
		// Instants are compared parsed, never as strings.
		created, err := clock.ParseStamp(c.ArrivedAt)
		if err != nil {
			rows.Close()
			return lsm.Input{}, domainerr.New("INVARIANT_VIOLATION", "transaction created_at is not RFC3339", map[string]any{"txid": c.TxID})
		}
		if created.After(closeAt) {
			continue // arrived after the close: the next window's
		}
		if c.DueAt != "" {
			if _, err := clock.ParseStamp(c.DueAt); err != nil {
				c.DueAt = ""
			}
		}
		cands = append(cands, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return lsm.Input{}, fmt.Errorf("batchwindow: snapshot %s: %w", windowID, err)
	}
	k := lsm.Constraints{WindowID: windowID, ClosedAt: clock.Stamp(closeAt), DueHorizon: clock.Stamp(closeAt.Add(horizon)),
		FairnessAgeSeconds: int64(w.cfg.FairnessAge / time.Second), Available: map[string]int64{},
		ThrottlePerPayer: w.cfg.ThrottlePerPayer}
	payers := map[string]bool{}
	for _, c := range cands {
		key := lsm.HKey(c.PayerBankID, c.Currency)
		if _, done := k.Available[key]; !done {
			u, err := hlimit.UsageOf(ctx, tx, c.PayerBankID, c.Currency)
			if err != nil && !domainerr.Has(err, "PARTICIPANT_NOT_FOUND") {
				return lsm.Input{}, fmt.Errorf("batchwindow: H of %s: %w", c.PayerBankID, err)
			}
			k.Available[key] = max(u.Available(), 0)
		}
		payers[c.PayerBankID] = true
	}
	for p := range payers {
		var active sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT is_active FROM Participants WHERE bank_id = ?`, p).Scan(&active)
		if err != nil && err != sql.ErrNoRows {
			return lsm.Input{}, fmt.Errorf("batchwindow: participant %s: %w", p, err)
		}
		if err == sql.ErrNoRows || active.Int64 == 0 {
			k.Stopped = append(k.Stopped, p)
		}
	}
	sort.Strings(k.Stopped)
	return lsm.Input{Candidates: cands, Constraints: k}, nil
}

// Jobs returns the bodies of bulk-window and deferred-window: one RunTx
// step each, so the window's reservations, hand-over and LsmRuns row
// commit with the step (exactly once).
func (w *Window) Jobs() []scheduler.Job {
	body := func(laneName string) scheduler.TxStepFunc {
		return func(ctx context.Context, tx *store.Tx, sc scheduler.StepContext) (string, error) {
			closeAt, err := CloseInstant(sc.BusinessDate, sc.RunKey, sc.Clock.Now())
			if err != nil {
				return "", err
			}
			rep, err := w.RunInTx(ctx, tx, laneName, sc.BusinessDate, WindowID(laneName, sc.BusinessDate, sc.RunKey), closeAt)
			if err != nil {
				return "", err
			}
			return rep.Summary(), nil
		}
	}
	return []scheduler.Job{
		{Name: JobBulk, Steps: []scheduler.Step{{Name: "lsm", RunTx: body(LaneBulk)}}},
		{Name: JobDeferred, Steps: []scheduler.Step{{Name: "lsm", RunTx: body(LaneDeferred)}}},
	}
}
