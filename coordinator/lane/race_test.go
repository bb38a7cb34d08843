package lane

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/store"
)

const racers = 16

// Cancel races a decision (H_RESERVED -> DECIDED_TO_SETTLE). Whichever
// wins, H is released and the payer's daily total given back if and only
// if the cancel won, and only once.
func TestCancelRaceDecidesHRelease(t *testing.T) {
	ctx := context.Background()
	wins := map[string]int{}
	for round := 0; round < 12; round++ {
		e := newEnv(t)
		n := newTx("TX-X")
		n.Payload = map[string]any{"amount": 5000, hlimit.DailyDateKey: "2026-04-01"} // counted in the env clock's JST day
		e.seedNewTx(t, n, HReserved, OwnerZC)
		e.reserveH(t, "TX-X", "001", 5000)
		// 5,000 of TX-X plus 7,000 of other transfers of the same JST day.
		e.exec(t, "UPDATE Participants SET daily_amount_used = 12000, daily_amount_last_reset_date = '2026-04-01' WHERE bank_id = '001'")
		var wg sync.WaitGroup
		start := make(chan struct{})
		var cancelWon, decideWon atomic.Int32
		for i := 0; i < racers; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				if i%2 == 0 {
					res, err := e.lanes.CancelInFlightTx(ctx, Cancel{TxID: "TX-X", ReasonCode: "TIMELOCK_EXPIRED"})
					if err != nil {
						t.Error(err)
					}
					if res.Applied {
						cancelWon.Add(1)
					} else if len(res.Released) != 0 {
						t.Error("losing cancel released H")
					}
				} else {
					res, err := e.lanes.TransitionWithLog(ctx, Transition{TxID: "TX-X", From: HReserved, To: DecidedToSettle, EventType: finality.DecidedToSettle})
					if err != nil {
						t.Error(err)
					}
					if res.Applied {
						decideWon.Add(1)
					}
				}
			}(i)
		}
		close(start)
		wg.Wait()
		if cancelWon.Load()+decideWon.Load() != 1 {
			t.Fatalf("round %d: cancel won %d, decide won %d; want exactly one winner", round, cancelWon.Load(), decideWon.Load())
		}
		r := e.row(t, "TX-X")
		used, open := e.hUsed(t, "001")
		daily := e.dailyUsed(t, "001")
		if cancelWon.Load() == 1 {
			wins["cancel"]++
			if r.State != DecidedCancel || used != 0 || open != 0 || daily != 7000 {
				t.Fatalf("cancel won but state=%s h_used=%d open=%d daily=%d", r.State, used, open, daily)
			}
		} else {
			wins["decide"]++
			if r.State != DecidedToSettle || used != 5000 || open != 1 || daily != 12000 {
				t.Fatalf("decision won but state=%s h_used=%d open=%d daily=%d (H and the daily total must stay)", r.State, used, open, daily)
			}
		}
		if r.Version != 1 || r.Logs != 2 {
			t.Fatalf("row %+v: one winner means version 1 and 2 entries", r)
		}
		e.verify(t)
	}
	t.Logf("winners over 12 rounds: %v", wins)
}

// A transition racing a handoff of the same row never lands on a row its
// issuer no longer owns: replaying each chain, every applied transition
// was made while its issuer owned the row.
func TestTransitionRacingHandoffNeverLandsOnForeignRow(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	const rows = 8
	ids := make([]string, rows)
	for i := range ids {
		ids[i] = "TX-H" + string(rune('A'+i))
		e.seedTx(t, ids[i], PayerExecConfirmed, OwnerZC)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	var violations, handoffs, transitions atomic.Int32
	for _, id := range ids {
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(id string, g int) {
				defer wg.Done()
				<-start
				if g == 0 {
					res, err := e.lanes.TransferOwnership(ctx, Handoff{TxID: id, FromOwner: OwnerZC, ToOwner: OwnerVenueBOJ})
					if err != nil {
						t.Error(err)
					}
					if res.Applied {
						handoffs.Add(1)
					}
					return
				}
				res, err := e.lanes.TransitionWithLog(ctx, Transition{TxID: id, From: PayerExecConfirmed, To: PayeeExecConfirmed, EventType: finality.PayeeExecConfirmed})
				switch {
				case domainerr.Code(err) == "OWNERSHIP_VIOLATION":
					violations.Add(1)
				case err != nil:
					t.Error(err)
				case res.Applied:
					transitions.Add(1)
				}
			}(id, g)
		}
	}
	close(start)
	wg.Wait()
	if handoffs.Load() != rows {
		t.Fatalf("handoffs applied %d, want %d", handoffs.Load(), rows)
	}
	t.Logf("transitions applied %d, refused for ownership %d", transitions.Load(), violations.Load())
	for _, id := range ids {
		owner := OwnerZC
		if err := e.db.Read(ctx, func(tx *store.Tx) error {
			rs, err := tx.QueryContext(ctx, "SELECT event_type, payload_json FROM FinalityLog WHERE txid = ? ORDER BY event_seq", id)
			if err != nil {
				return err
			}
			defer rs.Close()
			for rs.Next() {
				var ev, payload string
				if err := rs.Scan(&ev, &payload); err != nil {
					return err
				}
				switch finality.EventType(ev) {
				case finality.OwnershipTransferred:
					var p map[string]string
					if err := json.Unmarshal([]byte(payload), &p); err != nil {
						return err
					}
					owner = p["owner_to"]
				case finality.PayeeExecConfirmed:
					if owner != OwnerZC {
						t.Errorf("%s: ZC's transition landed while %s owned the row", id, owner)
					}
				}
			}
			return rs.Err()
		}); err != nil {
			t.Fatal(err)
		}
		if r := e.row(t, id); r.Owner != OwnerVenueBOJ {
			t.Errorf("%s owner %s, want VENUE:BOJ", id, r.Owner)
		}
	}
	e.verify(t)
}
