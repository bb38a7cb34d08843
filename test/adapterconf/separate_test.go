package adapterconf

import (
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/outbox"
)

// The cases a physically separate core adds: the core and the adapter
// share nothing but the queue, so every message can be lost, late,
// repeated or unreadable.
var separateCoreCases = []conformanceCase{
	{name: "separate/reply_lost", spec: "physically separate core", opts: func(o *options) { o.timeout = 100 * time.Millisecond }, run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("c1", "TX-1", "h:b", 700)))
		e.core.InjectFaultsForTest(coresim.Faults{DropNextReply: 1})
		e.drain()
		row := e.rows(outbox.Filter{TxID: "TX-1"})[0]
		if row.Status != outbox.InDoubt {
			t.Fatalf("applied posting whose reply was lost: %+v", row)
		}
		if e.coreBalance("h:b") != 700 {
			t.Fatal("the core did apply it; only the reply was lost")
		}
		e.settle()
		row = e.rows(outbox.Filter{TxID: "TX-1"})[0]
		if row.Status != outbox.Applied || row.Sends != 1 || len(e.journal(row.Posting.Ref)) != 1 {
			t.Fatalf("after resolution: %+v (journal %d)", row, len(e.journal(row.Posting.Ref)))
		}
		e.driftZero()
	}},
	{name: "separate/reply_late", spec: "physically separate core", opts: func(o *options) { o.timeout = 80 * time.Millisecond }, run: func(t *testing.T, e *env) {
		e.account("h:a", "SATO HANAKO", 5000)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteDebit(e.ctx, debitHV("d1", "TX-1", "h:a", 1500)))
		e.core.InjectFaultsForTest(coresim.Faults{DelayNextReply: 1, ReplyDelay: 160 * time.Millisecond})
		e.drain()
		time.Sleep(120 * time.Millisecond) // the late reply arrives after the requester gave up
		e.core.InjectFaultsForTest(coresim.Faults{})
		e.settle()
		row := e.rows(outbox.Filter{TxID: "TX-1"})[0]
		if row.Status != outbox.Applied || row.Sends != 1 || len(e.journal(row.Posting.Ref)) != 1 {
			t.Fatalf("after a late reply: %+v (journal %d)", row, len(e.journal(row.Posting.Ref)))
		}
		if e.coreBalance("h:a") != 3500 {
			t.Fatalf("core %d", e.coreBalance("h:a"))
		}
		e.driftZero()
	}},
	{name: "separate/crash_after_apply_before_reply", spec: "physically separate core", run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("c1", "TX-1", "h:b", 300)))
		e.core.InjectFaultsForTest(coresim.Faults{CrashAfterApplyBeforeReply: 1})
		e.drain()
		e.settle()
		row := e.rows(outbox.Filter{TxID: "TX-1"})[0]
		if row.Status != outbox.Applied || len(e.journal(row.Posting.Ref)) != 1 || e.coreBalance("h:b") != 300 {
			t.Fatalf("after a crash between apply and reply: %+v journal %d core %d", row, len(e.journal(row.Posting.Ref)), e.coreBalance("h:b"))
		}
		e.driftZero()
	}},
	{name: "separate/broker_redelivery", spec: "physically separate core", run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("c1", "TX-1", "h:b", 300)))
		e.core.InjectFaultsForTest(coresim.Faults{DeliverTwice: 1})
		e.drain()
		time.Sleep(50 * time.Millisecond) // let the core take the redelivered copy
		e.settle()
		row := e.rows(outbox.Filter{TxID: "TX-1"})[0]
		if len(e.journal(row.Posting.Ref)) != 1 || e.coreBalance("h:b") != 300 {
			t.Fatalf("a redelivered message was applied again: journal %d core %d", len(e.journal(row.Posting.Ref)), e.coreBalance("h:b"))
		}
		e.driftZero()
	}},
	{name: "separate/poison_message_to_backout_queue", spec: "physically separate core", run: func(t *testing.T, e *env) {
		e.account("h:b", "YAMADA TARO", 0)
		e.putRaw([]byte("\x00\x01 this is not a core message"))
		m, err := e.getBackout(3 * time.Second)
		if err != nil {
			t.Fatalf("poison message never reached the backout queue: %v", err)
		}
		if string(m.Body) != "\x00\x01 this is not a core message" || m.Properties[mq.PropBackoutSource] != e.rq ||
			m.Properties[mq.PropBackoutCount] != "3" || m.Properties[mq.PropBackoutReason] == "" {
			t.Fatalf("backout message: %q %v", m.Body, m.Properties)
		}
		// The core is unharmed and keeps serving postings.
		check[bankapi.ExecuteResponse](t)(e.a.ExecuteCredit(e.ctx, credit("c1", "TX-1", "h:b", 300)))
		e.settle()
		if e.coreBalance("h:b") != 300 {
			t.Fatalf("core %d", e.coreBalance("h:b"))
		}
		e.driftZero()
	}},
}
