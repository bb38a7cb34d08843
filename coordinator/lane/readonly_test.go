package lane

import (
	"context"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
)

// Every primitive refuses to write in each read-only mode, with the
// mode's retryable error, and writes nothing.
func TestPrimitivesRefuseWritesWhenReadOnly(t *testing.T) {
	ctx := context.Background()
	modes := []struct {
		name string
		set  func(e *env) error
		code string
	}{
		{"quorum loss", func(e *env) error { _, _, err := e.modes.ReconcileQuorum(ctx, 1, 3); return err }, "SYSTEM_QUORUM_LOSS_READ_ONLY"},
		{"BCP", func(e *env) error { _, _, err := e.modes.ActivateBCP(ctx, "op-1", "drill"); return err }, "SYSTEM_BCP_READ_ONLY"},
	}
	calls := append(primitiveCases(), struct {
		name  string
		state TxState
		owner string
		call  func(ctx context.Context, l *Lanes, side SideUpdates) error
	}{"InsertTxWithLog", HReserved, OwnerZC, func(ctx context.Context, l *Lanes, side SideUpdates) error {
		_, err := l.InsertTxWithLog(ctx, newTx("TX-NEW"))
		return err
	}}, struct {
		name  string
		state TxState
		owner string
		call  func(ctx context.Context, l *Lanes, side SideUpdates) error
	}{"TransitionGtidWithLog", HReserved, OwnerZC, func(ctx context.Context, l *Lanes, side SideUpdates) error {
		_, err := l.TransitionGtidWithLog(ctx, GtidTransition{GTID: "GT-1", From: GtReceived, To: GtPrechecked, EventType: finality.GtidPrechecked})
		return err
	}})
	for _, m := range modes {
		for _, pc := range calls {
			t.Run(m.name+"/"+pc.name, func(t *testing.T) {
				e := newEnv(t)
				e.seedTx(t, "TX-A", pc.state, pc.owner)
				e.exec(t, "INSERT INTO GtidTransactions (gtid, state, initiator_bank_id, total_amount, leg_count, created_at, updated_at) VALUES ('GT-1', 'GT_RECEIVED', '001', 1, 2, 'x', 'x')")
				if err := m.set(e); err != nil {
					t.Fatal(err)
				}
				before, logs := e.row(t, "TX-A"), e.totalLogs(t)
				err := pc.call(ctx, e.lanes, nil)
				if domainerr.Code(err) != m.code {
					t.Fatalf("err %v, want %s", err, m.code)
				}
				if de, _ := domainerr.As(err); !de.Retryable() {
					t.Fatalf("%s must be retryable", m.code)
				}
				if after := e.row(t, "TX-A"); after != before || e.totalLogs(t) != logs {
					t.Fatalf("read-only write changed rows: %+v -> %+v, logs %d -> %d", before, after, logs, e.totalLogs(t))
				}
			})
		}
	}
}

func TestWritesResumeOnlyWhenBothModesAreCleared(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.seedTx(t, "TX-1", Received, OwnerZC)
	try := func() error {
		_, err := e.lanes.TransitionWithLog(ctx, Transition{TxID: "TX-1", From: Received, To: Prechecked, EventType: finality.PreCheckPassed})
		return err
	}
	if _, _, err := e.modes.ReconcileQuorum(ctx, 1, 4); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.modes.ActivateBCP(ctx, "op", "x"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.modes.ReconcileQuorum(ctx, 3, 4); err != nil {
		t.Fatal(err)
	}
	if err := try(); domainerr.Code(err) != "SYSTEM_BCP_READ_ONLY" {
		t.Fatalf("after quorum recovery with BCP on: %v", err)
	}
	if _, _, err := e.modes.DeactivateBCP(ctx, "op", "x"); err != nil {
		t.Fatal(err)
	}
	if err := try(); err != nil {
		t.Fatalf("after both cleared: %v", err)
	}
	if r := e.row(t, "TX-1"); r.State != Prechecked {
		t.Fatalf("row %+v", r)
	}
}
