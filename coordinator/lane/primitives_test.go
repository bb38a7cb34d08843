package lane

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

func TestInsertTxWithLogCreatesRowAndFirstEntry(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	n := newTx("TX-1")
	n.ExtraColumns = map[string]any{"purpose": "P2P"}
	res, err := e.lanes.InsertTxWithLog(ctx, n)
	if err != nil || !res.Inserted {
		t.Fatalf("insert: %+v %v", res, err)
	}
	var lane, state, owner, purpose, created, pending string
	var version, amount int64
	if err := e.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT lane, state, owner, version, amount_value, purpose, created_at, pending_since FROM Transactions WHERE txid='TX-1'").
			Scan(&lane, &state, &owner, &version, &amount, &purpose, &created, &pending)
	}); err != nil {
		t.Fatal(err)
	}
	if lane != "EXPRESS" || state != "RECEIVED" || owner != "ZC" || version != 0 || amount != 5000 || purpose != "P2P" ||
		created != "2026-04-01T09:00:00.000000000Z" || pending != created {
		t.Fatalf("row = %s %s %s v%d %d %s %s %s", lane, state, owner, version, amount, purpose, created, pending)
	}
	if res.Entry.EventType != finality.PaymentInitiated || res.Entry.StateFrom != "" || res.Entry.StateTo != "RECEIVED" ||
		res.Entry.PrevHash != finality.Genesis || res.Entry.PayloadJSON != `{"amount":5000}` {
		t.Fatalf("entry = %+v", res.Entry)
	}
	// Same txid or same idempotency key: nothing written, no error.
	dup := newTx("TX-1")
	dup2 := newTx("TX-2")
	dup2.IdempotencyKey = n.IdempotencyKey
	for _, d := range []NewTx{dup, dup2} {
		res, err := e.lanes.InsertTxWithLog(ctx, d)
		if err != nil || res.Inserted {
			t.Fatalf("duplicate insert %s: %+v %v", d.TxID, res, err)
		}
	}
	if got := e.totalLogs(t); got != 1 {
		t.Fatalf("log entries = %d, want 1", got)
	}
}

func TestInsertTxValidation(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	mod := func(f func(*NewTx)) NewTx { n := newTx("TX-V"); f(&n); return n }
	for _, c := range []struct {
		n    NewTx
		code string
	}{
		{mod(func(n *NewTx) { n.TxID = "" }), "MISSING_FIELD"},
		{mod(func(n *NewTx) { n.PayerBankID = "" }), "MISSING_FIELD"},
		{mod(func(n *NewTx) { n.IdempotencyKey = "" }), "MISSING_FIELD"},
		{mod(func(n *NewTx) { n.Lane = "HTLC_AUTH" }), "INVALID_LANE"},
		{mod(func(n *NewTx) { n.AmountValue = 0 }), "INVALID_AMOUNT"},
		{mod(func(n *NewTx) { n.Currency = "yen" }), "INVALID_CURRENCY"},
		{mod(func(n *NewTx) { n.State = HtlcLocked; n.Lane = "HTLC" }), "IMPOSSIBLE_TRANSITION"},
		{mod(func(n *NewTx) { n.State = DecidedToSettle }), "IMPOSSIBLE_TRANSITION"}, // only GTID legs enter decided
		{mod(func(n *NewTx) { n.ExtraColumns = map[string]any{"owner": "VENUE:BOJ"} }), "INVALID_REQUEST"},
		{mod(func(n *NewTx) { n.ExtraColumns = map[string]any{"state": "SETTLED"} }), "INVALID_REQUEST"},
		{mod(func(n *NewTx) { n.ExtraColumns = map[string]any{"x; DROP TABLE Transactions": 1} }), "INVALID_REQUEST"},
		{mod(func(n *NewTx) { n.EventType = "Bogus" }), "INVARIANT_VIOLATION"},
	} {
		if _, err := e.lanes.InsertTxWithLog(ctx, c.n); domainerr.Code(err) != c.code {
			t.Errorf("%+v: err %v, want %s", c.n, err, c.code)
		}
	}
	if n := e.totalLogs(t); n != 0 {
		t.Fatalf("refused inserts wrote %d log entries", n)
	}
	gt := mod(func(n *NewTx) { n.Lane = "GTID"; n.State = DecidedToSettle })
	if res, err := e.lanes.InsertTxWithLog(ctx, gt); err != nil || !res.Inserted {
		t.Fatalf("GTID leg at DECIDED_TO_SETTLE: %+v %v", res, err)
	}
}

func TestTransitionWithLogMovesStateAndChains(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.seedTx(t, "TX-1", Received, OwnerZC)
	e.clk.Advance(1e9)
	path := []TxState{Prechecked, HReserved, DecidedToSettle, PayerExecConfirmed, PayeeExecConfirmed, Settled}
	from := Received
	var prevHash string
	for i, to := range path {
		res, err := e.lanes.TransitionWithLog(ctx, Transition{TxID: "TX-1", From: from, To: to, EventType: eventFor(to),
			SetColumns: map[string]any{"decision_proof_ref": "DP-" + string(to)}})
		if err != nil || !res.Applied || res.PreviousState != from || res.State != to || res.Version != int64(i+1) {
			t.Fatalf("%s -> %s: %+v %v", from, to, res, err)
		}
		if i > 0 && res.Entry.PrevHash != prevHash {
			t.Fatalf("entry %d not chained to the previous one", i)
		}
		prevHash = res.Entry.EntryHash
		from = to
	}
	r := e.row(t, "TX-1")
	if r.State != Settled || r.Version != 6 || r.Owner != OwnerZC || r.Logs != 7 {
		t.Fatalf("row = %+v", r)
	}
	var proof, pending string
	if err := e.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT decision_proof_ref, pending_since FROM Transactions WHERE txid='TX-1'").Scan(&proof, &pending)
	}); err != nil || proof != "DP-SETTLED" || pending != "2026-04-01T09:00:01.000000000Z" {
		t.Fatalf("columns proof=%s pending=%s err=%v", proof, pending, err)
	}
	e.verify(t)

	// Stale From: not applied, nothing written.
	res, err := e.lanes.TransitionWithLog(ctx, Transition{TxID: "TX-1", From: Received, To: Prechecked, EventType: finality.PreCheckPassed})
	if err != nil || res.Applied || res.PreviousState != Settled || e.row(t, "TX-1").Logs != 7 {
		t.Fatalf("stale transition: %+v %v", res, err)
	}
}

func TestTransitionRefusals(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.seedTx(t, "TX-1", Received, OwnerZC)
	for _, c := range []struct {
		tr   Transition
		code string
	}{
		{Transition{TxID: "TX-1", From: Received, To: Settled, EventType: finality.Settled}, "IMPOSSIBLE_TRANSITION"},
		{Transition{TxID: "TX-1", From: "BOGUS", To: Prechecked, EventType: finality.PreCheckPassed}, "IMPOSSIBLE_TRANSITION"},
		{Transition{TxID: "TX-1", From: Received, To: Prechecked}, "MISSING_FIELD"},
		{Transition{TxID: "", From: Received, To: Prechecked, EventType: finality.PreCheckPassed}, "MISSING_FIELD"},
		{Transition{TxID: "TX-404", From: Received, To: Prechecked, EventType: finality.PreCheckPassed}, "TX_NOT_FOUND"},
		{Transition{TxID: "TX-1", From: Received, To: Prechecked, EventType: finality.PreCheckPassed, Issuer: "VENUE:BOJ"}, "OWNERSHIP_VIOLATION"},
		{Transition{TxID: "TX-1", From: Received, To: Prechecked, EventType: finality.PreCheckPassed, SetColumns: map[string]any{"owner": "VENUE:BOJ"}}, "INVALID_REQUEST"},
		{Transition{TxID: "TX-1", From: Received, To: Prechecked, EventType: finality.PreCheckPassed, SetColumns: map[string]any{"version": 9}}, "INVALID_REQUEST"},
		{Transition{TxID: "TX-1", From: Received, To: Prechecked, EventType: finality.PreCheckPassed, NewOwner: "BANK:1"}, "INVALID_REQUEST"},
		{Transition{TxID: "TX-1", From: Received, To: Prechecked, EventType: "NotDeclared"}, "INVARIANT_VIOLATION"},
	} {
		if _, err := e.lanes.TransitionWithLog(ctx, c.tr); domainerr.Code(err) != c.code {
			t.Errorf("%+v: err %v, want %s", c.tr, err, c.code)
		}
	}
	if r := e.row(t, "TX-1"); r.State != Received || r.Version != 0 || r.Logs != 1 {
		t.Fatalf("refusals changed the row: %+v", r)
	}
	if de, _ := domainerr.As(func() error {
		_, err := e.lanes.TransitionWithLog(ctx, Transition{TxID: "TX-1", From: Received, To: Prechecked, EventType: finality.PreCheckPassed, Issuer: "CHAIN:default"})
		return err
	}()); de == nil || de.Category != domainerr.Invariant {
		t.Fatalf("OWNERSHIP_VIOLATION must be INVARIANT, got %+v", de)
	}
}

func TestTransitionWithNewOwnerHandsOffInTheSameCAS(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.seedTx(t, "TX-H", HtlcLocked, OwnerZC)
	res, err := e.lanes.TransitionWithLog(ctx, Transition{TxID: "TX-H", From: HtlcLocked, To: HtlcOnchainPending, EventType: finality.HtlcOnchainPending, NewOwner: OwnerChainDefault, Payload: map[string]any{"source": "ETH"}})
	if err != nil || !res.Applied || res.Owner != OwnerChainDefault {
		t.Fatalf("%+v %v", res, err)
	}
	var p map[string]any
	if err := json.Unmarshal([]byte(res.Entry.PayloadJSON), &p); err != nil || p["owner_from"] != "ZC" || p["owner_to"] != "CHAIN:default" || p["source"] != "ETH" {
		t.Fatalf("payload %s", res.Entry.PayloadJSON)
	}
	// Now only the watcher set may move it; it hands back to ZC on release.
	if _, err := e.lanes.TransitionWithLog(ctx, Transition{TxID: "TX-H", From: HtlcOnchainPending, To: HtlcFulfillRequested, EventType: finality.HtlcFulfillRequested}); domainerr.Code(err) != "OWNERSHIP_VIOLATION" {
		t.Fatalf("ZC moved a CHAIN-owned row: %v", err)
	}
	res, err = e.lanes.TransitionWithLog(ctx, Transition{TxID: "TX-H", From: HtlcOnchainPending, To: HtlcFulfillRequested, EventType: finality.HtlcFulfillRequested, Issuer: OwnerChainDefault, NewOwner: OwnerZC})
	if err != nil || !res.Applied || e.row(t, "TX-H").Owner != OwnerZC {
		t.Fatalf("watcher release: %+v %v", res, err)
	}
}

func TestCancelReleasesHOnlyWhenItWins(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.seedTx(t, "TX-C", HReserved, OwnerVenueBOJ)
	e.reserveH(t, "TX-C", "001", 5000)
	if used, open := e.hUsed(t, "001"); used != 5000 || open != 1 {
		t.Fatalf("setup h_used=%d open=%d", used, open)
	}
	// Not the owner: refused, nothing released.
	if _, err := e.lanes.CancelInFlightTx(ctx, Cancel{TxID: "TX-C", ReasonCode: "CANCEL_BY_PAYER"}); domainerr.Code(err) != "OWNERSHIP_VIOLATION" {
		t.Fatalf("cancel by non-owner: %v", err)
	}
	// Guard miss: not applied, nothing released.
	res, err := e.lanes.CancelInFlightTx(ctx, Cancel{TxID: "TX-C", ReasonCode: "CANCEL_BY_PAYER", Issuer: OwnerVenueBOJ, FromStates: []TxState{Received}})
	if err != nil || res.Applied || len(res.Released) != 0 {
		t.Fatalf("guard miss: %+v %v", res, err)
	}
	if used, open := e.hUsed(t, "001"); used != 5000 || open != 1 {
		t.Fatalf("guard miss released H: h_used=%d open=%d", used, open)
	}
	res, err = e.lanes.CancelInFlightTx(ctx, Cancel{TxID: "TX-C", ReasonCode: "CANCEL_BY_PAYER", Issuer: OwnerVenueBOJ})
	if err != nil || !res.Applied || len(res.Released) != 1 || res.Released[0].Amount != 5000 {
		t.Fatalf("cancel: %+v %v", res, err)
	}
	r := e.row(t, "TX-C")
	if r.State != DecidedCancel || r.Owner != OwnerZC || r.Reason != "CANCEL_BY_PAYER" || r.Version != 1 || r.Logs != 2 {
		t.Fatalf("row after cancel %+v", r)
	}
	if used, open := e.hUsed(t, "001"); used != 0 || open != 0 {
		t.Fatalf("after cancel h_used=%d open=%d, want 0 0", used, open)
	}
	var p map[string]any
	if err := json.Unmarshal([]byte(res.Entry.PayloadJSON), &p); err != nil || p["reason_code"] != "CANCEL_BY_PAYER" || p["owner_to"] != "ZC" {
		t.Fatalf("payload %s", res.Entry.PayloadJSON)
	}
	// A second cancel is a guard miss (DECIDED_CANCEL is not cancellable).
	res, err = e.lanes.CancelInFlightTx(ctx, Cancel{TxID: "TX-C", ReasonCode: "CANCEL_BY_PAYER"})
	if err != nil || res.Applied {
		t.Fatalf("second cancel: %+v %v", res, err)
	}
	if _, err := e.lanes.CancelInFlightTx(ctx, Cancel{TxID: "TX-C", ReasonCode: "X", FromStates: []TxState{DecidedToSettle}}); domainerr.Code(err) != "IMPOSSIBLE_TRANSITION" {
		t.Fatalf("cancel from DECIDED_TO_SETTLE: %v", err)
	}
	if _, err := e.lanes.CancelInFlightTx(ctx, Cancel{TxID: "TX-C"}); domainerr.Code(err) != "MISSING_FIELD" {
		t.Fatalf("cancel without reason: %v", err)
	}
	e.verify(t)
}

func TestCancelReleasesNonJPYOnCurrencyLimits(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.exec(t, "INSERT INTO ParticipantCurrencyLimits (bank_id, currency, h_limit, h_used) VALUES ('001', 'USD', 100000, 700)")
	e.seedTx(t, "TX-U", Prechecked, OwnerZC)
	e.exec(t, "INSERT INTO HReservations (reservation_id, txid, bank_id, amount, currency, created_at) VALUES ('HR-U', 'TX-U', '001', 700, 'USD', 'x')")
	if _, err := e.lanes.CancelInFlightTx(ctx, Cancel{TxID: "TX-U", ReasonCode: "INSUFFICIENT_FUNDS"}); err != nil {
		t.Fatal(err)
	}
	var used int64
	var released sql.NullString
	if err := e.db.Read(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRowContext(ctx, "SELECT h_used FROM ParticipantCurrencyLimits WHERE bank_id='001' AND currency='USD'").Scan(&used); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT released_at FROM HReservations WHERE reservation_id='HR-U'").Scan(&released)
	}); err != nil || used != 0 || released.String != "2026-04-01T09:00:00.000000000Z" {
		t.Fatalf("USD h_used=%d released_at=%v err=%v", used, released, err)
	}
	if jpy, _ := e.hUsed(t, "001"); jpy != 0 {
		t.Fatalf("JPY h_used touched: %d", jpy)
	}
}

func TestCancelRefusesToDriveHUsedNegative(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.seedTx(t, "TX-N", Prechecked, OwnerZC)
	e.exec(t, "INSERT INTO HReservations (reservation_id, txid, bank_id, amount, created_at) VALUES ('HR-N', 'TX-N', '001', 10, 'x')") // h_used is 0
	if _, err := e.lanes.CancelInFlightTx(ctx, Cancel{TxID: "TX-N", ReasonCode: "X"}); domainerr.Code(err) != "INVARIANT_VIOLATION" {
		t.Fatalf("err %v, want INVARIANT_VIOLATION", err)
	}
	if r := e.row(t, "TX-N"); r.State != Prechecked || r.Version != 0 || r.Logs != 1 {
		t.Fatalf("failed cancel left %+v", r)
	}
}

func TestTransferOwnership(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.seedTx(t, "TX-O", PayerExecConfirmed, OwnerZC)
	res, err := e.lanes.TransferOwnership(ctx, Handoff{TxID: "TX-O", FromOwner: OwnerZC, ToOwner: OwnerVenueBOJ,
		SetColumns: map[string]any{"external_settlement_status": "REQUESTED"}})
	if err != nil || !res.Applied || res.Owner != OwnerVenueBOJ || res.State != PayerExecConfirmed {
		t.Fatalf("%+v %v", res, err)
	}
	if res.Entry.EventType != finality.OwnershipTransferred || res.Entry.StateFrom != "PAYER_EXEC_CONFIRMED" || res.Entry.StateTo != "PAYER_EXEC_CONFIRMED" {
		t.Fatalf("entry %+v", res.Entry)
	}
	r := e.row(t, "TX-O")
	if r.State != PayerExecConfirmed || r.Owner != OwnerVenueBOJ || r.Version != 1 || r.Logs != 2 {
		t.Fatalf("row %+v", r)
	}
	// A second handoff from ZC is a CAS miss, not an error.
	res, err = e.lanes.TransferOwnership(ctx, Handoff{TxID: "TX-O", FromOwner: OwnerZC, ToOwner: OwnerChainDefault})
	if err != nil || res.Applied || res.Owner != OwnerVenueBOJ {
		t.Fatalf("stale handoff: %+v %v", res, err)
	}
	// The venue hands back on its callback; reclaim needs ToOwner ZC.
	if _, err := e.lanes.TransferOwnership(ctx, Handoff{TxID: "TX-O", FromOwner: OwnerVenueBOJ, ToOwner: OwnerChainDefault, EventType: finality.OwnershipReclaimed}); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Fatalf("reclaim to non-ZC: %v", err)
	}
	res, err = e.lanes.TransferOwnership(ctx, Handoff{TxID: "TX-O", FromOwner: OwnerVenueBOJ, ToOwner: OwnerZC, EventType: finality.OwnershipReclaimed})
	if err != nil || !res.Applied || e.row(t, "TX-O").Owner != OwnerZC {
		t.Fatalf("reclaim: %+v %v", res, err)
	}
	for _, h := range []Handoff{
		{TxID: "TX-O", FromOwner: OwnerZC, ToOwner: OwnerZC},
		{TxID: "TX-O", FromOwner: OwnerZC, ToOwner: "BANK:001"},
		{TxID: "TX-O", FromOwner: OwnerZC, ToOwner: OwnerVenueBOJ, EventType: finality.Settled},
	} {
		if _, err := e.lanes.TransferOwnership(ctx, h); domainerr.Code(err) != "INVALID_REQUEST" {
			t.Errorf("%+v: %v", h, err)
		}
	}
	e.seedTx(t, "TX-T", Settled, OwnerZC)
	if _, err := e.lanes.TransferOwnership(ctx, Handoff{TxID: "TX-T", FromOwner: OwnerZC, ToOwner: OwnerVenueBOJ}); domainerr.Code(err) != "STATE_GUARD" {
		t.Fatalf("handoff of a settled row: %v", err)
	}
	e.verify(t)
}

func TestSuspendTx(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.seedTx(t, "TX-S", PayerExecConfirmed, OwnerVenueBOJ)
	// A sweep (issuer ZC) lost the row to the venue: skipped, not an error.
	res, err := e.lanes.SuspendTx(ctx, Suspend{TxID: "TX-S", From: PayerExecConfirmed, ReasonCode: "SUSPEND_PAYEE_PROOF_TIMEOUT"})
	if err != nil || !res.Skipped || res.Applied {
		t.Fatalf("non-owner suspend: %+v %v", res, err)
	}
	if r := e.row(t, "TX-S"); r.State != PayerExecConfirmed || r.Logs != 1 {
		t.Fatalf("skipped suspend wrote: %+v", r)
	}
	// IGS_FAILED: the venue suspends and custody returns to ZC.
	res, err = e.lanes.SuspendTx(ctx, Suspend{TxID: "TX-S", From: PayerExecConfirmed, ReasonCode: "IGS_FAILED", Issuer: OwnerVenueBOJ})
	if err != nil || !res.Applied || res.State != Suspended || res.Owner != OwnerZC {
		t.Fatalf("venue suspend: %+v %v", res, err)
	}
	if r := e.row(t, "TX-S"); r.State != Suspended || r.Owner != OwnerZC || r.Reason != "IGS_FAILED" || r.Version != 1 || r.Logs != 2 {
		t.Fatalf("row %+v", r)
	}
	e.seedTx(t, "TX-P", Prechecked, OwnerZC)
	res, err = e.lanes.SuspendTx(ctx, Suspend{TxID: "TX-P", From: Prechecked, ReasonCode: "SUSPEND_NAMECHECK_PENDING"})
	if err != nil || res.State != PrecheckedSuspended {
		t.Fatalf("default target before decision: %+v %v", res, err)
	}
	for _, s := range []Suspend{
		{TxID: "TX-P", From: Received, To: Suspended, ReasonCode: "X"},
		{TxID: "TX-P", From: PrecheckedSuspended, To: Cancelled, ReasonCode: "X"},
	} {
		if _, err := e.lanes.SuspendTx(ctx, s); domainerr.Code(err) == "" {
			t.Errorf("%+v accepted", s)
		}
	}
	if _, err := e.lanes.SuspendTx(ctx, Suspend{TxID: "TX-P", From: Prechecked}); domainerr.Code(err) != "MISSING_FIELD" {
		t.Errorf("suspend without reason: %v", err)
	}
	e.verify(t)
}

func TestTransitionGtid(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.exec(t, "INSERT INTO GtidTransactions (gtid, state, initiator_bank_id, total_amount, leg_count, created_at, updated_at) VALUES ('GT-1', 'GT_RECEIVED', '001', 100, 2, 'x', 'x')")
	if _, err := e.lanes.TransitionGtidWithLog(ctx, GtidTransition{GTID: "GT-1", From: GtReceived, To: GtSettled, EventType: finality.GtidSettled}); domainerr.Code(err) != "IMPOSSIBLE_TRANSITION" {
		t.Fatalf("GT_RECEIVED -> GT_SETTLED: %v", err)
	}
	steps := [][2]GtidState{{GtReceived, GtPrechecked}, {GtPrechecked, GtDecidedToSettle}, {GtDecidedToSettle, GtSettled}}
	evs := []finality.EventType{finality.GtidPrechecked, finality.GtidDecided, finality.GtidSettled}
	for i, s := range steps {
		res, err := e.lanes.TransitionGtidWithLog(ctx, GtidTransition{GTID: "GT-1", From: s[0], To: s[1], EventType: evs[i]})
		if err != nil || !res.Applied || res.Version != int64(i+1) || res.Entry.ChainID() != "GT-1" {
			t.Fatalf("%v: %+v %v", s, res, err)
		}
	}
	res, err := e.lanes.TransitionGtidWithLog(ctx, GtidTransition{GTID: "GT-1", From: GtReceived, To: GtPrechecked, EventType: finality.GtidPrechecked})
	if err != nil || res.Applied || res.PreviousState != GtSettled {
		t.Fatalf("stale: %+v %v", res, err)
	}
	if _, err := e.lanes.TransitionGtidWithLog(ctx, GtidTransition{GTID: "GT-404", From: GtReceived, To: GtPrechecked, EventType: finality.GtidPrechecked}); domainerr.Code(err) != "GTID_NOT_FOUND" {
		t.Fatalf("missing gtid: %v", err)
	}
	if r, err := finality.VerifyChain(ctx, e.db, "GT-1"); err != nil || !r.OK() || r.Entries != 3 {
		t.Fatalf("GT chain %+v %v", r, err)
	}
}

// Several transitions grouped into one commit by the ...InTx variants.
func TestInTxVariantsBatchIntoOneCommit(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ids := []string{"TX-B1", "TX-B2", "TX-B3"}
	before := e.db.Stats().Commits
	if err := e.db.Write(ctx, func(tx *store.Tx) error {
		for _, id := range ids {
			if _, err := e.lanes.InsertTxInTx(ctx, tx, newTx(id)); err != nil {
				return err
			}
			if _, err := e.lanes.TransitionInTx(ctx, tx, Transition{TxID: id, From: Received, To: Prechecked, EventType: finality.PreCheckPassed}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := e.db.Stats().Commits - before; got != 1 {
		t.Fatalf("commits = %d, want 1", got)
	}
	for _, id := range ids {
		if r := e.row(t, id); r.State != Prechecked || r.Logs != 2 {
			t.Fatalf("%s: %+v", id, r)
		}
	}
	e.verify(t)
}
