package dns

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/store"
)

// Schema is this package's own DDL (schema.sql): the journal of the
// settlement postings on the simulated central-bank accounts. It lives in
// the coordinator database next to the spec-003 DNS tables and is applied
// by EnsureSchema (idempotent).
//
//go:embed schema.sql
var Schema string

// EnsureSchema applies Schema to db (idempotent; call it at start-up after
// store.OpenCoordinator).
func EnsureSchema(ctx context.Context, db *store.DB) error {
	if err := db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, Schema)
		return err
	}); err != nil {
		return fmt.Errorf("dns: apply schema: %w", err)
	}
	return nil
}
