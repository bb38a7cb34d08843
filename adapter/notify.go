package adapter

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/uuid"
)

// Notification kinds.
const (
	NotifyCredit = "CREDIT" // credit-notify, Ref is the txid
	NotifyRTP    = "RTP"    // rtp-notify, Ref is the rtp_id
)

// Notification is a stored credit-notify or rtp-notify for the core.
type Notification struct {
	ID          int64
	Kind        string
	Ref         string
	AccountHash string
	Amount      int64
	Payload     json.RawMessage // the ingress request body as received
	RequestID   string
}

// storeNotification stores one notification per (kind, ref); a resend of
// the same transfer's notification under another request_id stores
// nothing new.
func (a *Adapter) storeNotification(ctx context.Context, tx *store.Tx, kind, ref, hash string, amount int64, requestID string, body any) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("adapter: encode notification: %w", err)
	}
	var acct any
	if hash != "" {
		acct = hash
	}
	var dup int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterNotifications WHERE kind = ? AND ref = ?`, kind, ref).Scan(&dup); err != nil {
		return fmt.Errorf("adapter: read notifications: %w", err)
	}
	if dup > 0 {
		a.log.InfoContext(ctx, "adapter.notify_duplicate", "kind", kind, "ref", ref, "request_id", requestID)
		return nil
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO AdapterNotifications
		(request_id, kind, ref, account_hash, amount, payload_json, status, created_at)
		VALUES (?, ?, ?, ?, ?, ?, 'NEW', ?)`, requestID, kind, ref, acct, amount, string(payload), a.now())
	if err != nil {
		return fmt.Errorf("adapter: store notification %s %s: %w", kind, ref, err)
	}
	a.log.InfoContext(ctx, "adapter.notify", "kind", kind, "ref", ref, "amount", amount)
	return nil
}

// PullNotifications hands up to limit NEW notifications to the core and
// marks them PULLED in the same transaction with a guarded UPDATE, so each
// notification is pulled exactly once even by concurrent pullers.
func (a *Adapter) PullNotifications(ctx context.Context, limit int) ([]Notification, error) {
	if limit <= 0 {
		limit = 100
	}
	token := "PULL-" + uuid.New()
	var out []Notification
	err := a.db.Write(ctx, func(tx *store.Tx) error {
		out = nil
		_, err := tx.ExecContext(ctx, `UPDATE AdapterNotifications SET status = 'PULLED', pull_token = ?, pulled_at = ?
			WHERE status = 'NEW' AND id IN (SELECT id FROM AdapterNotifications WHERE status = 'NEW' ORDER BY id LIMIT ?)`,
			token, clock.Stamp(a.clk.Now()), limit)
		if err != nil {
			return fmt.Errorf("adapter: pull notifications: %w", err)
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, kind, ref, COALESCE(account_hash, ''), amount, payload_json, request_id
			FROM AdapterNotifications WHERE pull_token = ? ORDER BY id`, token)
		if err != nil {
			return fmt.Errorf("adapter: read pulled notifications: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var n Notification
			var p string
			if err := rows.Scan(&n.ID, &n.Kind, &n.Ref, &n.AccountHash, &n.Amount, &p, &n.RequestID); err != nil {
				return err
			}
			n.Payload = json.RawMessage(p)
			out = append(out, n)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	if len(out) > 0 {
		a.log.InfoContext(ctx, "adapter.notifications_pulled", "count", len(out))
	}
	return out, nil
}
