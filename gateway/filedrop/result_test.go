package filedrop

import (
	"testing"

	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/formats/zengin"
)

// TestResultCodeOnlyForFinalOutcomes: a bank is told 振替済 only for a
// SETTLED transfer. A transfer decided to settle but still executing, or
// SUSPENDED after its credit failed (waiting for a Case), is not final, so
// its file's result waits; a failed or cancelled one gets its 振替不能 code.
func TestResultCodeOnlyForFinalOutcomes(t *testing.T) {
	decided := func(state, reason string) orchestrator.View {
		var v orchestrator.View
		v.State, v.ReasonCode = state, reason
		v.Decision.Status = "DECIDED_TO_SETTLE"
		return v
	}
	cases := []struct {
		name  string
		v     orchestrator.View
		code  zengin.ResultCode
		final bool
	}{
		{"received", orchestrator.View{State: "RECEIVED"}, 0, false},
		{"decided, executing", decided("DECIDED_TO_SETTLE", ""), 0, false},
		{"payer debited", decided("PAYER_EXEC_CONFIRMED", ""), 0, false},
		{"credit failed, suspended", decided("SUSPENDED", "EXEC_CREDIT_FAILED"), 0, false},
		{"settled", decided("SETTLED", ""), zengin.ResultDone, true},
		{"failed execution", decided("FAILED_EXECUTION", "FAILED_EXEC_TIMEOUT"), zengin.ResultOther, true},
		{"cancelled, no funds", orchestrator.View{State: "CANCELLED", ReasonCode: "INSUFFICIENT_FUNDS"}, zengin.ResultNoFunds, true},
		{"decided cancel, no account", orchestrator.View{State: "DECIDED_CANCEL", ReasonCode: "ACCOUNT_NOT_FOUND"}, zengin.ResultNoAccount, true},
	}
	for _, c := range cases {
		code, final := ResultCode(c.v)
		if code != c.code || final != c.final {
			t.Errorf("%s: ResultCode = %v, final %v; want %v, %v", c.name, code, final, c.code, c.final)
		}
	}
}
