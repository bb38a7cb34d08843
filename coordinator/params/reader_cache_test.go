package params

import (
	"context"
	"testing"
	"time"
)

// TestReaderDurationIsCachedUntilASet: the signature skew read once costs
// no statement the next time, and the value a Set writes is what the very
// next read returns, through any Reader of the database.
func TestReaderDurationIsCachedUntilASet(t *testing.T) {
	db, l, _ := setup(t)
	ctx := context.Background()
	r := Reader{DB: db}
	if d, err := r.Duration(ctx, SignatureClockSkew); err != nil || d != DefaultSignatureSkew {
		t.Fatalf("default skew %s, %v", d, err)
	}
	before := db.Stats().Statements
	if d, _ := r.Duration(ctx, SignatureClockSkew); d != DefaultSignatureSkew {
		t.Fatalf("cached skew %s", d)
	}
	if n := db.Stats().Statements - before; n != 0 {
		t.Fatalf("a cached read cost %d statements", n)
	}
	set := func(old, new int64) {
		t.Helper()
		if _, err := l.Set(ctx, Change{Name: SignatureClockSkew, Old: old, New: new, EvidenceRef: "CAB-1", Reason: "r", By: "alice"}); err != nil {
			t.Fatal(err)
		}
	}
	set(int64(DefaultSignatureSkew/time.Second), 120)
	if d, err := r.Duration(ctx, SignatureClockSkew); err != nil || d != 120*time.Second {
		t.Fatalf("after the change: %s, %v", d, err)
	}
	set(120, 60)
	if d, _ := (Reader{DB: db}).Duration(ctx, SignatureClockSkew); d != 60*time.Second {
		t.Fatalf("after the second change: %s", d)
	}
}
