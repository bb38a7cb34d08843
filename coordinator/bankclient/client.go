package bankclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/failpoint"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/zclog"
)

// MaxResponseBytes bounds a bank's answer.
const MaxResponseBytes = 1 << 20

// Config wires a Client.
type Config struct {
	// BaseURL is the scheme and authority the bank ingress is served on,
	// e.g. "http://127.0.0.1:8080". Required.
	BaseURL string
	// Signer signs every request (Ed25519 preferred, HMAC fallback).
	// Required: the coordinator never sends an unsigned command.
	Signer signing.RequestSigner
	// HTTP is the client to use (nil: a client with its own transport).
	HTTP *http.Client
	// Timeout bounds one call when ctx has no earlier deadline (default 10s).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Client calls bank ingress over signed HTTP. It is safe for concurrent use.
type Client struct {
	base    string
	signer  signing.RequestSigner
	http    *http.Client
	timeout time.Duration
	log     *slog.Logger
}

// New returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("bankclient: Config.BaseURL is required")
	}
	if cfg.Signer == nil {
		return nil, errors.New("bankclient: Config.Signer is required")
	}
	if cfg.HTTP == nil {
		// The orchestrator keeps hundreds of calls in flight to one host
		// (the node's own ingress): keep that many connections idle for
		// reuse (net/http's default is 2 per host, which churns TCP).
		cfg.HTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, IdleConnTimeout: 90 * time.Second}}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &Client{base: strings.TrimRight(cfg.BaseURL, "/"), signer: cfg.Signer, http: cfg.HTTP,
		timeout: cfg.Timeout, log: zclog.OrDiscard(cfg.Logger).With("component", "bankclient")}, nil
}

// Call sends req to bankID's ingress and decodes a 2xx answer into resp (a
// pointer to the command's bankapi response type; nil discards it).
func (c *Client) Call(ctx context.Context, bankID string, req bankapi.Request, resp any) error {
	cmd := req.Command()
	details := map[string]any{"bank_id": bankID, "command": string(cmd)}
	body, err := json.Marshal(req)
	if err != nil {
		return domainerr.Wrap("INVALID_REQUEST", err, "cannot encode "+string(cmd), details)
	}
	path := cmd.Path(bankID)
	sig, err := c.signer.Sign(http.MethodPost, path, body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return domainerr.Wrap("BANK_ERROR", err, "cannot build the request to bank "+bankID, details)
	}
	for k, vs := range sig {
		hr.Header[k] = vs
	}
	hr.Header.Set("Content-Type", "application/json")
	if id := req.RequestID(); id != "" {
		hr.Header.Set("X-Idempotency-Key", id)
	}
	// Tracing: the caller's request id, else the command's own request_id
	// (deterministic per txid and command), so the bank's log lines, its
	// error body and this call share one id.
	rid := zclog.RequestIDFrom(ctx)
	if rid == "" {
		rid = req.RequestID()
	}
	if rid != "" {
		hr.Header.Set("X-Request-Id", rid)
	}
	start := time.Now()
	res, err := c.http.Do(hr)
	if err != nil {
		return c.transportError(ctx, err, bankID, details)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, MaxResponseBytes+1))
	if err != nil {
		return c.transportError(ctx, err, bankID, details)
	}
	failpoint.Hit("bankclient.after-answer")
	details["status"] = res.StatusCode
	c.log.DebugContext(ctx, "bankclient.called", "bank_id", bankID, "command", string(cmd), "status", res.StatusCode,
		"duration_ms", time.Since(start).Milliseconds())
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return errorFromBody(res.StatusCode, raw, details)
	}
	if resp == nil {
		return nil
	}
	if len(raw) > MaxResponseBytes {
		return domainerr.New("BANK_ERROR", fmt.Sprintf("bank %s answered more than %d bytes", bankID, MaxResponseBytes), details)
	}
	if err := json.Unmarshal(raw, resp); err != nil {
		return domainerr.Wrap("BANK_ERROR", err, "bank "+bankID+" answered a body that is not the "+string(cmd)+" response", details)
	}
	return nil
}

func (c *Client) transportError(ctx context.Context, err error, bankID string, details map[string]any) error {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded || (errors.As(err, &ne) && ne.Timeout()) {
		return domainerr.Wrap("BANK_TIMEOUT", err, "bank "+bankID+" did not answer in time", details)
	}
	return domainerr.Wrap("BANK_ERROR", err, "bank "+bankID+" could not be reached", details)
}

// errorFromBody maps a non-2xx answer: a catalog body keeps the bank's
// reason_code, category and details (so a code unknown to this build keeps
// its category); anything else is BANK_ERROR.
func errorFromBody(status int, raw []byte, details map[string]any) error {
	var eb bankapi.ErrorBody
	if err := json.Unmarshal(raw, &eb); err == nil && eb.ReasonCode != "" {
		cat := domainerr.Category(eb.Category)
		if cat == "" {
			cat = domainerr.CategoryFromStatus(status)
		}
		d := eb.Details
		if d == nil {
			d = map[string]any{}
		}
		return &domainerr.Error{Code: eb.ReasonCode, Category: cat, Message: eb.Error, Details: d}
	}
	return domainerr.New("BANK_ERROR", fmt.Sprintf("bank answered HTTP %d without a catalog error body", status), details)
}
