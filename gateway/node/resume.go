package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/gateway"
)

// resumeClient is each adapter's adapter.CreditResumer: the payee bank's
// decision on a held credit goes to ZC as a real request to the node's
// own POST /internal/transfers/{txid}/resume-credit, with the internal
// credential (X-Cron-Secret), as the bank side of a deployment would send
// it. The node's URL is read at call time (the listener opens after the
// banks).
type resumeClient struct {
	n      *Node
	client *http.Client
}

func newResumeClient(n *Node) resumeClient {
	return resumeClient{n: n, client: &http.Client{Timeout: 10 * time.Second}}
}

func (c resumeClient) ResumeCredit(ctx context.Context, txid string, req bankapi.ResumeCreditRequest) (bankapi.ResumeCreditResponse, error) {
	var out bankapi.ResumeCreditResponse
	if c.n.URL == "" {
		return out, domainerr.New("BANK_ERROR", "ZC's listener is not open yet", map[string]any{"txid": txid})
	}
	body, err := json.Marshal(req)
	if err != nil {
		return out, fmt.Errorf("node: encode resume-credit: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.n.URL+"/internal/transfers/"+url.PathEscape(txid)+"/resume-credit", bytes.NewReader(body))
	if err != nil {
		return out, fmt.Errorf("node: resume-credit request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set(gateway.HeaderCronSecret, c.n.Config.CronSecret)
	res, err := c.client.Do(hr)
	if err != nil {
		return out, domainerr.Wrap("BANK_ERROR", err, "ZC's resume-credit could not be reached", map[string]any{"txid": txid})
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return out, domainerr.Wrap("BANK_ERROR", err, "cannot read ZC's resume-credit answer", map[string]any{"txid": txid})
	}
	if res.StatusCode != http.StatusOK {
		var eb domainerr.Body
		if json.Unmarshal(raw, &eb) == nil && eb.ReasonCode != "" {
			cat := domainerr.Category(eb.Category)
			if cat == "" {
				cat = domainerr.CategoryFromStatus(res.StatusCode)
			}
			return out, &domainerr.Error{Code: eb.ReasonCode, Category: cat, Message: "ZC resume-credit: " + eb.Error, Details: eb.Details}
		}
		return out, domainerr.New("BANK_ERROR", fmt.Sprintf("ZC's resume-credit answered HTTP %d", res.StatusCode), map[string]any{"txid": txid})
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, domainerr.Wrap("BANK_ERROR", err, "ZC's resume-credit answer is not a ResumeCreditResponse", map[string]any{"txid": txid})
	}
	return out, nil
}
