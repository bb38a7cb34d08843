package store

import "context"

// Writer opens write transactions. *DB is a Writer that commits every
// call on its own; Grouped(db) is a Writer whose calls share commits with
// concurrent callers (WriteGrouped). Both give each call's fn
// all-or-nothing effect and return only after the commit holding fn's
// writes is durable, so code taking a Writer behaves the same with
// either; only the number of fsyncs differs.
type Writer interface {
	Write(ctx context.Context, fn func(tx *Tx) error) error
}

var (
	_ Writer = (*DB)(nil)
	_ Writer = GroupedWriter{}
)

// GroupedWriter is the Writer whose Write is db.WriteGrouped.
type GroupedWriter struct{ db *DB }

// Grouped returns the group-commit Writer of db.
func Grouped(db *DB) GroupedWriter { return GroupedWriter{db: db} }

// Write runs fn in its own savepoint of a commit shared with concurrent
// callers (see DB.WriteGrouped).
func (g GroupedWriter) Write(ctx context.Context, fn func(tx *Tx) error) error {
	return g.db.WriteGrouped(ctx, fn)
}
