package sysmode

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Mode is a system mode.
type Mode string

// The modes. NORMAL is the absence of both read-only flags.
const (
	Normal             Mode = "NORMAL"
	QuorumLossReadOnly Mode = "QUORUM_LOSS_READONLY"
	BCPReadOnly        Mode = "BCP_READONLY"
)

// Status is the state of both flags.
type Status struct {
	QuorumLoss bool
	BCP        bool
}

// Writable reports whether writes are allowed (neither flag set).
func (s Status) Writable() bool { return !s.QuorumLoss && !s.BCP }

// Modes lists the active modes, or [NORMAL].
func (s Status) Modes() []Mode {
	var out []Mode
	if s.QuorumLoss {
		out = append(out, QuorumLossReadOnly)
	}
	if s.BCP {
		out = append(out, BCPReadOnly)
	}
	if len(out) == 0 {
		out = []Mode{Normal}
	}
	return out
}

// ReadStatus reads both flags inside tx (read or write transaction).
func ReadStatus(ctx context.Context, tx *store.Tx) (Status, error) {
	if v, ok := tx.Memo(statusMemo); ok {
		return v.(Status), nil
	}
	rows, err := tx.QueryContext(ctx, "SELECT mode, active FROM SystemMode")
	if err != nil {
		return Status{}, fmt.Errorf("sysmode: read SystemMode: %w", err)
	}
	defer rows.Close()
	var s Status
	n := 0
	for rows.Next() {
		var mode string
		var active int
		if err := rows.Scan(&mode, &active); err != nil {
			return Status{}, fmt.Errorf("sysmode: read SystemMode: %w", err)
		}
		n++
		switch Mode(mode) {
		case QuorumLossReadOnly:
			s.QuorumLoss = active == 1
		case BCPReadOnly:
			s.BCP = active == 1
		}
	}
	if err := rows.Err(); err != nil {
		return Status{}, fmt.Errorf("sysmode: read SystemMode: %w", err)
	}
	if n != 2 {
		// A missing row would silently read as "writable": fail closed.
		return Status{}, domainerr.New("INVARIANT_VIOLATION", "SystemMode must hold exactly the two mode rows", map[string]any{"rows": n})
	}
	tx.SetMemo(statusMemo, s)
	return s, nil
}

// statusMemo is the Tx memo of the modes a transaction read (ReadStatus):
// a group commit's callers each pass the writable gate, and the modes
// change only by the Controller's UPDATE (which forgets the memo) or a
// rolled-back savepoint (which drops every memo), so the gate reads
// SystemMode once per transaction instead of once per primitive.
const statusMemo = "sysmode.status"

// Gate is the writable gate. The zero value is ready to use.
type Gate struct{}

// CheckWritable returns nil when writes are allowed, and otherwise
// SYSTEM_QUORUM_LOSS_READ_ONLY (checked first: without quorum nothing can
// commit safely) or SYSTEM_BCP_READ_ONLY, both DOWNSTREAM and so
// retryable. It reads the flags inside the caller's write transaction, so
// a mode change and a write are serialised: no write commits after the
// commit that set a read-only flag.
func (Gate) CheckWritable(ctx context.Context, tx *store.Tx) error {
	s, err := ReadStatus(ctx, tx)
	if err != nil {
		return err
	}
	switch {
	case s.QuorumLoss:
		return domainerr.New("SYSTEM_QUORUM_LOSS_READ_ONLY", "coordinator is read-only: consensus quorum lost", map[string]any{"modes": s.Modes()})
	case s.BCP:
		return domainerr.New("SYSTEM_BCP_READ_ONLY", "coordinator is read-only: BCP mode declared by the operator", map[string]any{"modes": s.Modes()})
	}
	return nil
}

// Controller changes the modes.
type Controller struct {
	db     *store.DB
	log    *finality.Log
	clock  clock.Clock
	logger *slog.Logger
}

// NewController returns a Controller. logger may be nil.
func NewController(db *store.DB, log *finality.Log, clk clock.Clock, logger *slog.Logger) *Controller {
	if clk == nil {
		clk = clock.System{}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Controller{db: db, log: log, clock: clk, logger: logger}
}

// Status reads the current flags (always allowed).
func (c *Controller) Status(ctx context.Context) (Status, error) {
	var s Status
	err := c.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		s, err = ReadStatus(ctx, tx)
		return err
	})
	return s, err
}

// HasQuorum reports whether up of configured replicas is a strict
// majority: up >= floor(configured/2)+1.
func HasQuorum(up, configured int) bool { return up >= configured/2+1 }

// ReconcileQuorum is the only writer of QUORUM_LOSS_READONLY: it sets the
// flag when replicasUp is below the strict majority floor(N/2)+1 of
// replicasConfigured, and clears it when the majority is back. It never
// touches BCP_READONLY. changed reports whether the flag moved.
func (c *Controller) ReconcileQuorum(ctx context.Context, replicasUp, replicasConfigured int) (s Status, changed bool, err error) {
	if replicasConfigured < 1 || replicasUp < 0 || replicasUp > replicasConfigured {
		return Status{}, false, domainerr.New("INVALID_REQUEST", "replica counts out of range",
			map[string]any{"replicas_up": replicasUp, "replicas_configured": replicasConfigured})
	}
	lost := !HasQuorum(replicasUp, replicasConfigured)
	ev := finality.SystemQuorumLossCleared
	if lost {
		ev = finality.SystemQuorumLossActivated
	}
	detail := map[string]any{"replicas_up": replicasUp, "replicas_configured": replicasConfigured, "required": replicasConfigured/2 + 1}
	return c.set(ctx, QuorumLossReadOnly, lost, "SYSTEM", "quorum reconciliation", ev, detail)
}

// ActivateBCP declares BCP_READONLY on behalf of operator, for reason
// (both required: the GLOBAL-chain event records who and why). It is the
// only way the flag is set; it does not touch QUORUM_LOSS_READONLY.
func (c *Controller) ActivateBCP(ctx context.Context, operator, reason string) (Status, bool, error) {
	if err := operatorAction("BCP activation", operator, reason); err != nil {
		return Status{}, false, err
	}
	return c.set(ctx, BCPReadOnly, true, operator, reason, finality.SystemBcpActivated, nil)
}

// DeactivateBCP lifts BCP_READONLY on behalf of operator. It does not
// clear QUORUM_LOSS_READONLY: writes stay refused while quorum is lost.
func (c *Controller) DeactivateBCP(ctx context.Context, operator, reason string) (Status, bool, error) {
	if err := operatorAction("BCP deactivation", operator, reason); err != nil {
		return Status{}, false, err
	}
	return c.set(ctx, BCPReadOnly, false, operator, reason, finality.SystemBcpDeactivated, nil)
}

// operatorAction refuses an operator mode change without its operator id
// or its reason (MISSING_FIELD naming the field).
func operatorAction(what, operator, reason string) error {
	if strings.TrimSpace(operator) == "" {
		return domainerr.New("MISSING_FIELD", what+" needs the operator id", map[string]any{"field": "operator"})
	}
	if strings.TrimSpace(reason) == "" {
		return domainerr.New("MISSING_FIELD", what+" needs a reason", map[string]any{"field": "reason"})
	}
	return nil
}

// FlagState is one mode flag as SystemMode holds it: whether it is active
// and the last change (who, why, when; empty when never changed).
type FlagState struct {
	Mode      Mode           `json:"mode"`
	Active    bool           `json:"active"`
	Actor     string         `json:"actor,omitempty"`
	Reason    string         `json:"reason,omitempty"`
	ChangedAt string         `json:"changed_at,omitempty"` // RFC3339 UTC
	Detail    map[string]any `json:"detail,omitempty"`
	Version   int64          `json:"version"`
}

// View is the mode as an operator sees it: the effective modes, whether
// writes are allowed, and both flags with their last change.
type View struct {
	Modes    []Mode      `json:"modes"`
	Writable bool        `json:"writable"`
	Flags    []FlagState `json:"flags"`
}

// Show reads the modes with the last change of each flag (always allowed).
func (c *Controller) Show(ctx context.Context) (View, error) {
	var v View
	err := c.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		v, err = ReadView(ctx, tx)
		return err
	})
	return v, err
}

// ReadView reads the View inside tx.
func ReadView(ctx context.Context, tx *store.Tx) (View, error) {
	s, err := ReadStatus(ctx, tx)
	if err != nil {
		return View{}, err
	}
	v := View{Modes: s.Modes(), Writable: s.Writable()}
	rows, err := tx.QueryContext(ctx, `SELECT mode, active, COALESCE(actor, ''), COALESCE(reason, ''), COALESCE(changed_at, ''), COALESCE(detail, ''), version
		FROM SystemMode ORDER BY mode`)
	if err != nil {
		return View{}, fmt.Errorf("sysmode: read SystemMode: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var f FlagState
		var active int
		var detail string
		if err := rows.Scan(&f.Mode, &active, &f.Actor, &f.Reason, &f.ChangedAt, &detail, &f.Version); err != nil {
			return View{}, fmt.Errorf("sysmode: read SystemMode: %w", err)
		}
		f.Active = active == 1
		if detail != "" && detail != "null" {
			if err := json.Unmarshal([]byte(detail), &f.Detail); err != nil {
				return View{}, fmt.Errorf("sysmode: SystemMode %s detail: %w", f.Mode, err)
			}
		}
		v.Flags = append(v.Flags, f)
	}
	if err := rows.Err(); err != nil {
		return View{}, fmt.Errorf("sysmode: read SystemMode: %w", err)
	}
	return v, nil
}

// set flips one flag with a guarded UPDATE and, only when it applied,
// appends the GLOBAL-chain event in the same transaction.
func (c *Controller) set(ctx context.Context, mode Mode, active bool, actor, reason string, ev finality.EventType, detail map[string]any) (Status, bool, error) {
	want, was := 0, 1
	from, to := string(mode), string(Normal)
	if active {
		want, was = 1, 0
		from, to = string(Normal), string(mode)
	}
	detailJSON, err := json.Marshal(detail)
	if err != nil {
		return Status{}, false, fmt.Errorf("sysmode: encode detail: %w", err)
	}
	var s Status
	var changed bool
	err = c.db.Write(ctx, func(tx *store.Tx) error {
		now := clock.Stamp(c.clock.Now())
		ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE SystemMode SET active = ?, reason = ?, actor = ?, detail = ?, changed_at = ?, version = version + 1
			WHERE mode = ? AND active = ?`, want, reason, actor, string(detailJSON), now, string(mode), was))
		tx.Forget(statusMemo) // a neighbour in this group commit may have read the modes before this change
		if err != nil {
			return fmt.Errorf("sysmode: update %s: %w", mode, err)
		}
		changed = ok
		if ok {
			payload := map[string]any{"mode": mode, "active": active, "actor": actor, "reason": reason}
			for k, v := range detail {
				payload[k] = v
			}
			if _, err := c.log.Append(ctx, tx, finality.Event{Type: ev, StateFrom: from, StateTo: to, Payload: payload}); err != nil {
				return err
			}
		}
		s, err = ReadStatus(ctx, tx)
		return err
	})
	if err != nil {
		return Status{}, false, err
	}
	if changed {
		c.logger.Info("sysmode.changed", "mode", string(mode), "active", active, "actor", actor, "reason", reason)
	}
	return s, changed, nil
}
