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
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/gateway"
)

// zcClient is how a bank's side reaches ZC in this node, as a bank's
// systems would: real HTTP requests to the node's own listener. It is
// each adapter's adapter.CreditResumer (POST
// /internal/transfers/{txid}/resume-credit with the internal credential,
// X-Cron-Secret) and adapter.TransferPort (POST /api/transfers and GET
// /api/transactions/{txid} with the bank's own API key). The node's URL is
// read at call time (the listener opens after the banks).
type zcClient struct {
	n      *Node
	client *http.Client
}

func newZCClient(n *Node) zcClient {
	return zcClient{n: n, client: &http.Client{Timeout: 10 * time.Second}}
}

// do sends one request and decodes a 2xx answer into out (raw bytes when
// out is *json.RawMessage); any other answer in the catalog shape becomes
// its domainerr.Error, anything else BANK_ERROR.
func (c zcClient) do(ctx context.Context, method, path string, hdr map[string]string, in, out any) error {
	details := map[string]any{"path": path}
	if c.n.URL == "" {
		return domainerr.New("BANK_ERROR", "ZC's listener is not open yet", details)
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("node: encode %s: %w", path, err)
		}
		body = bytes.NewReader(b)
	}
	hr, err := http.NewRequestWithContext(ctx, method, c.n.URL+path, body)
	if err != nil {
		return fmt.Errorf("node: request %s: %w", path, err)
	}
	if in != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		hr.Header.Set(k, v)
	}
	res, err := c.client.Do(hr)
	if err != nil {
		return domainerr.Wrap("BANK_ERROR", err, "ZC could not be reached", details)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return domainerr.Wrap("BANK_ERROR", err, "cannot read ZC's answer", details)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		var eb domainerr.Body
		if json.Unmarshal(raw, &eb) == nil && eb.ReasonCode != "" {
			cat := domainerr.Category(eb.Category)
			if cat == "" {
				cat = domainerr.CategoryFromStatus(res.StatusCode)
			}
			return &domainerr.Error{Code: eb.ReasonCode, Category: cat, Message: "ZC: " + eb.Error, Details: eb.Details}
		}
		return domainerr.New("BANK_ERROR", fmt.Sprintf("ZC answered HTTP %d", res.StatusCode), details)
	}
	if rm, ok := out.(*json.RawMessage); ok {
		*rm = append(json.RawMessage(nil), raw...)
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return domainerr.Wrap("BANK_ERROR", err, "ZC's answer is not the expected body", details)
	}
	return nil
}

func (c zcClient) ResumeCredit(ctx context.Context, txid string, req bankapi.ResumeCreditRequest) (bankapi.ResumeCreditResponse, error) {
	var out bankapi.ResumeCreditResponse
	err := c.do(ctx, http.MethodPost, "/internal/transfers/"+url.PathEscape(txid)+"/resume-credit",
		map[string]string{gateway.HeaderCronSecret: c.n.Config.CronSecret}, req, &out)
	return out, err
}

func (c zcClient) SubmitTransfer(ctx context.Context, bankID string, req orchestrator.PaymentInitiated, key string) (orchestrator.SubmitResult, error) {
	var out orchestrator.SubmitResult
	err := c.do(ctx, http.MethodPost, "/api/transfers", map[string]string{"X-Api-Key": c.n.Config.KeyFor(bankID)},
		gateway.TransferRequest{PaymentInitiated: req, IdempotencyKey: key}, &out)
	return out, err
}

func (c zcClient) QueryTransfer(ctx context.Context, bankID, txid string) (json.RawMessage, error) {
	var out json.RawMessage
	err := c.do(ctx, http.MethodGet, "/api/transactions/"+url.PathEscape(txid),
		map[string]string{"X-Api-Key": c.n.Config.KeyFor(bankID), gateway.HeaderPurposeCode: "P01"}, nil, &out)
	return out, err
}
