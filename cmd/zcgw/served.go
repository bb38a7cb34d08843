package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/procid"
)

// refuseIfServed answers a command that needs the cores or the MQ of the
// data folder (one consumer per core queue) and cannot go through the node
// serving it: when a node serves the folder it prints why, naming the node,
// and returns 1 and true.
func refuseIfServed(e *env, cmd, why string) (int, bool) {
	info, served, err := procid.Running(e.DataDir)
	if err != nil {
		fmt.Fprintf(e.Stderr, "zcgw %s: %v\n", cmd, err)
		return 1, true
	}
	if !served {
		return 0, false
	}
	fmt.Fprintf(e.Stderr, "zcgw %s: refused: the data folder %s is served by node %s (pid %d, addr %s), which %s; "+
		"stop that node first, or use another --data\n", cmd, e.DataDir, info.Node, info.PID, info.Addr, why)
	return 1, true
}

// nodeError is the catalog error a node answered, with the node named; it
// unwraps to the *domainerr.Error so callers can read its code and details.
type nodeError struct {
	err *domainerr.Error
	who string
}

func (e *nodeError) Error() string {
	return fmt.Sprintf("%s: %s (answered by %s)", e.err.Code, e.err.Message, e.who)
}
func (e *nodeError) Unwrap() error { return e.err }

// callNode sends an operator request to the node serving e.DataDir (info
// from procid.Running), with the folder's operator credential
// (authorizeNode), and decodes a 2xx answer into out. Any other answer is
// an error: the node's catalog error (a *nodeError) when it sent one.
func callNode(ctx context.Context, e *env, info procid.Info, method, path string, body, out any) error {
	return callNodeWith(ctx, e, info, method, path, nil, body, out)
}

// callNodeWith is callNode with extra request headers (e.g. an /api
// route's X-Purpose-Code).
func callNodeWith(ctx context.Context, e *env, info procid.Info, method, path string, hdr http.Header, body, out any) error {
	who := fmt.Sprintf("node %s (pid %d, addr %s)", info.Node, info.PID, info.Addr)
	if info.Addr == "" {
		return fmt.Errorf("the data folder %s is held by %s, which is not listening (starting, or another command): try again in a moment", e.DataDir, who)
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+info.Addr+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header[k] = v
	}
	if err := authorizeNode(e.DataDir, req); err != nil {
		return fmt.Errorf("credentials for %s: %w", who, err)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("ask %s: %w", who, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("read the answer of %s: %w", who, err)
	}
	if resp.StatusCode/100 != 2 {
		var eb domainerr.Body
		if json.Unmarshal(raw, &eb) != nil || eb.ReasonCode == "" {
			return fmt.Errorf("%s answered %s: %s", who, resp.Status, bytes.TrimSpace(raw))
		}
		return &nodeError{err: &domainerr.Error{Code: eb.ReasonCode, Category: domainerr.Category(eb.Category), Message: eb.Error, Details: eb.Details}, who: who}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("the answer of %s: %w", who, err)
	}
	return nil
}
