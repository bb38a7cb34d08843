package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/gateway"
	"github.com/zcgw/zcgw/gateway/node"
)

// apiClient talks to the node's /api as its banks and its operator do:
// POST /api/transfers with the payer bank's API key, queries with the
// operator key and a purpose code.
type apiClient struct {
	base string
	cfg  node.Config
	http *http.Client
}

func newAPIClient(n *node.Node) *apiClient {
	return &apiClient{base: n.URL, cfg: n.Config, http: &http.Client{Timeout: 30 * time.Second}}
}

// postResult is the answer to one POST /api/transfers.
type postResult struct {
	Status   int
	Replayed bool
	Body     orchestrator.SubmitResult
}

// transfer sends one PaymentInitiated as the payer bank.
func (c *apiClient) transfer(ctx context.Context, lane, key string, from, to account, amount int64) (postResult, error) {
	pi := orchestrator.PaymentInitiated{Lane: lane, Amount: bankapi.Amount{Value: amount, Currency: "JPY"},
		Payer: orchestrator.Party{BankID: from.Bank, AccountHash: from.Hash()}, Payee: orchestrator.Party{BankID: to.Bank, AccountHash: to.Hash()},
		Purpose: "P2P", ClientRef: key, SchemaVersion: gateway.SchemaCurrent}
	return c.post(ctx, key, from.Bank, pi)
}

// transferByRef posts an EXPRESS transfer that names its payee by pspr_ref
// alone; the payee bank resolves the account.
func (c *apiClient) transferByRef(ctx context.Context, key string, from, to account, amount int64) (postResult, error) {
	pi := orchestrator.PaymentInitiated{Lane: orchestrator.LaneExpress, Amount: bankapi.Amount{Value: amount, Currency: "JPY"},
		Payer: orchestrator.Party{BankID: from.Bank, AccountHash: from.Hash()}, Payee: orchestrator.Party{BankID: to.Bank},
		PSPRRef: to.PSPR, Purpose: "MERCHANT", ClientRef: key, SchemaVersion: gateway.SchemaCurrent}
	return c.post(ctx, key, from.Bank, pi)
}

func (c *apiClient) post(ctx context.Context, key, bank string, pi orchestrator.PaymentInitiated) (postResult, error) {
	body, err := json.Marshal(gateway.TransferRequest{PaymentInitiated: pi, IdempotencyKey: key})
	if err != nil {
		return postResult{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/api/transfers", bytes.NewReader(body))
	if err != nil {
		return postResult{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", c.cfg.KeyFor(bank))
	req.Header.Set("X-Request-Id", "demo-"+key)
	var out postResult
	resp, err := c.do(req, &out.Body)
	if err != nil {
		return out, fmt.Errorf("POST /api/transfers %s: %w", key, err)
	}
	out.Status, out.Replayed = resp.StatusCode, resp.Header.Get("Idempotent-Replayed") == "true"
	return out, nil
}

// transaction is GET /api/transactions/{txid} as the operator.
func (c *apiClient) transaction(ctx context.Context, txid string) (gateway.QueryResponse, error) {
	var q gateway.QueryResponse
	err := c.get(ctx, "/api/transactions/"+txid, &q)
	return q, err
}

// verify is GET /api/transactions/{txid}/verify as the operator.
func (c *apiClient) verify(ctx context.Context, txid string) (gateway.VerifyResponse, error) {
	var v gateway.VerifyResponse
	err := c.get(ctx, "/api/transactions/"+txid+"/verify", &v)
	return v, err
}

// events is GET /api/transactions/{txid}/events as the operator.
func (c *apiClient) events(ctx context.Context, txid string) ([]gateway.Event, error) {
	var e struct {
		Events []gateway.Event `json:"events"`
	}
	err := c.get(ctx, "/api/transactions/"+txid+"/events", &e)
	return e.Events, err
}

func (c *apiClient) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Api-Key", c.cfg.OperatorKey())
	req.Header.Set(gateway.HeaderPurposeCode, "P01")
	if _, err := c.do(req, v); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// do sends req and decodes a 2xx JSON body into v; any other status is an
// error carrying the catalog body.
func (c *apiClient) do(req *http.Request, v any) (*http.Response, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp, err
	}
	if resp.StatusCode/100 != 2 {
		return resp, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	if err := json.Unmarshal(b, v); err != nil {
		return resp, fmt.Errorf("HTTP %d: decode: %w", resp.StatusCode, err)
	}
	return resp, nil
}
