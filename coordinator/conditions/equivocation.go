package conditions

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/store"
)

// ReasonAttestationEquivocation is the Case reason of a (template,
// subject) with both PASS and FAIL attestations (spec 000 §11.2-c, 004).
const ReasonAttestationEquivocation = "ATTESTATION_EQUIVOCATION"

// OpenEquivocationCasesTx opens (or joins) one ATTESTATION_EQUIVOCATION
// Case per template of d.Equivocated, inside the caller's write
// transaction, linked to relatedTxID when given. The cause key is the
// detection path "conditions" plus (template, subject), so evaluating the
// same equivocation again joins the same unresolved Case instead of
// opening another. The evaluator itself never writes: the caller that
// acts on a Decision (the HTLC claim) calls this in the transaction that
// records the decision.
func OpenEquivocationCasesTx(ctx context.Context, tx *store.Tx, cs *cases.Cases, d Decision, subject, relatedTxID string) ([]cases.Opened, error) {
	var out []cases.Opened
	for _, id := range d.Equivocated {
		var q *QuorumResult
		for _, r := range d.Reasons {
			if r.TemplateID == id && r.Leaf != nil && r.Leaf.Quorum != nil {
				q = r.Leaf.Quorum
				break
			}
		}
		desc := fmt.Sprintf("template %s, subject %s: PASS and FAIL attestations (evaluated %s)", id, subject, d.EvaluatedAt)
		if q != nil {
			desc = fmt.Sprintf("template %s, subject %s: PASS from %v, FAIL from %v (evaluated %s)", id, subject, q.Pass, q.Fail, d.EvaluatedAt)
		}
		o, err := cs.OpenCase(ctx, tx, cases.OpenRequest{ReasonCode: ReasonAttestationEquivocation, Description: desc, OpenedBy: "ZC",
			RelatedTxID: relatedTxID, DetectionPath: "conditions", Cause: id + ":" + subject})
		if err != nil {
			return out, fmt.Errorf("conditions: open the equivocation case of %s/%s: %w", id, subject, err)
		}
		out = append(out, o)
	}
	return out, nil
}
