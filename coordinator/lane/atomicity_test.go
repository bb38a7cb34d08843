package lane

import (
	"context"
	"errors"
	"testing"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

var errInjected = errors.New("injected failure")

// primitiveCases calls each primitive on TX-A (seeded in a state and owner
// it accepts) with the given side updates.
func primitiveCases() []struct {
	name  string
	state TxState
	owner string
	call  func(ctx context.Context, l *Lanes, side SideUpdates) error
} {
	return []struct {
		name  string
		state TxState
		owner string
		call  func(ctx context.Context, l *Lanes, side SideUpdates) error
	}{
		{"TransitionWithLog", HReserved, OwnerZC, func(ctx context.Context, l *Lanes, side SideUpdates) error {
			_, err := l.TransitionWithLog(ctx, Transition{TxID: "TX-A", From: HReserved, To: DecidedToSettle, EventType: finality.DecidedToSettle, SideUpdates: side})
			return err
		}},
		{"CancelInFlightTx", HReserved, OwnerVenueBOJ, func(ctx context.Context, l *Lanes, side SideUpdates) error {
			_, err := l.CancelInFlightTx(ctx, Cancel{TxID: "TX-A", ReasonCode: "CANCEL_BY_PAYER", Issuer: OwnerVenueBOJ, SideUpdates: side})
			return err
		}},
		{"TransferOwnership", HReserved, OwnerZC, func(ctx context.Context, l *Lanes, side SideUpdates) error {
			_, err := l.TransferOwnership(ctx, Handoff{TxID: "TX-A", FromOwner: OwnerZC, ToOwner: OwnerVenueBOJ, SideUpdates: side})
			return err
		}},
		{"SuspendTx", PayerExecConfirmed, OwnerVenueBOJ, func(ctx context.Context, l *Lanes, side SideUpdates) error {
			_, err := l.SuspendTx(ctx, Suspend{TxID: "TX-A", From: PayerExecConfirmed, ReasonCode: "IGS_FAILED", Issuer: OwnerVenueBOJ, SideUpdates: side})
			return err
		}},
	}
}

// A failure after the CAS UPDATE but before the log insert, or inside
// the caller's side update, leaves state, version, owner, H and the log
// exactly as they were.
func TestPrimitivesAreAllOrNothing(t *testing.T) {
	ctx := context.Background()
	sideWrite := func(ctx context.Context, tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE Participants SET is_active = 0 WHERE bank_id = '002'")
		return err
	}
	for _, pc := range primitiveCases() {
		for _, fault := range []string{"after CAS", "in side update", "after side write"} {
			t.Run(pc.name+"/"+fault, func(t *testing.T) {
				e := newEnv(t)
				e.seedTx(t, "TX-A", pc.state, pc.owner)
				e.reserveH(t, "TX-A", "001", 5000)
				before := e.row(t, "TX-A")
				logsBefore := e.totalLogs(t)
				side := sideWrite
				switch fault {
				case "after CAS":
					e.lanes.afterCAS = func(context.Context, *store.Tx, string) error { return errInjected }
				case "in side update":
					side = func(context.Context, *store.Tx) error { return errInjected }
				case "after side write":
					side = func(ctx context.Context, tx *store.Tx) error {
						if err := sideWrite(ctx, tx); err != nil {
							return err
						}
						return errInjected
					}
				}
				if err := pc.call(ctx, e.lanes, side); !errors.Is(err, errInjected) {
					t.Fatalf("err = %v, want the injected failure", err)
				}
				if after := e.row(t, "TX-A"); after != before {
					t.Fatalf("row changed: before %+v after %+v", before, after)
				}
				if n := e.totalLogs(t); n != logsBefore {
					t.Fatalf("log entries %d -> %d", logsBefore, n)
				}
				if used, open := e.hUsed(t, "001"); used != 5000 || open != 1 {
					t.Fatalf("H changed: h_used=%d open=%d", used, open)
				}
				var active int
				if err := e.db.Read(ctx, func(tx *store.Tx) error {
					return tx.QueryRowContext(ctx, "SELECT is_active FROM Participants WHERE bank_id='002'").Scan(&active)
				}); err != nil || active != 1 {
					t.Fatalf("side write survived: is_active=%d %v", active, err)
				}
				// Without the fault the same call applies everything.
				e.lanes.afterCAS = nil
				if err := pc.call(ctx, e.lanes, sideWrite); err != nil {
					t.Fatal(err)
				}
				if after := e.row(t, "TX-A"); after.Version != before.Version+1 || after.Logs != before.Logs+1 {
					t.Fatalf("clean run: %+v", after)
				}
				e.verify(t)
			})
		}
	}
}

func TestInsertIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.lanes.afterCAS = func(context.Context, *store.Tx, string) error { return errInjected }
	if _, err := e.lanes.InsertTxWithLog(ctx, newTx("TX-I")); !errors.Is(err, errInjected) {
		t.Fatalf("err %v", err)
	}
	e.lanes.afterCAS = nil
	n := newTx("TX-I")
	n.SideUpdates = func(context.Context, *store.Tx) error { return errInjected }
	if _, err := e.lanes.InsertTxWithLog(ctx, n); !errors.Is(err, errInjected) {
		t.Fatalf("err %v", err)
	}
	var rows int
	if err := e.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM Transactions").Scan(&rows)
	}); err != nil || rows != 0 || e.totalLogs(t) != 0 {
		t.Fatalf("rows=%d logs=%d after failed inserts", rows, e.totalLogs(t))
	}
}
