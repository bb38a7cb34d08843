package workbook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"regexp"
)

// KeySize is the size of the node's workbook key (HMAC-SHA256).
const KeySize = 32

// sealFormat names the row MAC recipe; it is the Control sheet's format
// cell, and the first input of every MAC.
const sealFormat = "zcgw-recon-v2"

// Seal binds a workbook to the node that writes it: the node's secret
// workbook key and the workbook id the node issued for this copy (recorded
// by the caller, with the rows written, so that the node later accepts
// decisions only from a workbook it issued).
type Seal struct {
	WorkbookID string
	Key        []byte
}

var workbookIDPattern = regexp.MustCompile(`^WB-[0-9a-f]{32}$`)

// NewWorkbookID returns a fresh workbook id, "WB-" and 32 random hex digits.
func NewWorkbookID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("workbook: id: %w", err)
	}
	return "WB-" + hex.EncodeToString(b[:]), nil
}

func (s Seal) check() error {
	if len(s.Key) < KeySize {
		return fmt.Errorf("workbook: seal key is %d bytes, want at least %d", len(s.Key), KeySize)
	}
	if !workbookIDPattern.MatchString(s.WorkbookID) {
		return fmt.Errorf("workbook: workbook id %q is not WB-<32 hex digits>", s.WorkbookID)
	}
	return nil
}

// rowMAC is the HMAC-SHA256, under the node's workbook key, of an exception
// row's identifying cells bound to the format, the workbook id and the
// business date. Without the key nobody can make a row the node accepts:
// not by editing a cell and recomputing, not by adding a row, not by
// moving a row from another workbook, date or node.
func rowMAC(key []byte, workbookID, businessDate string, cells []string) string {
	return newMACer(key).mac(workbookID, businessDate, cells)
}

// macer computes row MACs under one key, reusing its HMAC state and
// buffer from row to row (a workbook has up to millions of rows).
type macer struct {
	h   hash.Hash
	buf []byte
	sum []byte
}

func newMACer(key []byte) *macer { return &macer{h: hmac.New(sha256.New, key)} }

func (m *macer) mac(workbookID, businessDate string, cells []string) string {
	m.buf = m.buf[:0]
	field := func(c string) {
		// Each field length-prefixed: no cell boundary can be moved.
		m.buf = binary.BigEndian.AppendUint32(m.buf, uint32(len(c)))
		m.buf = append(m.buf, c...)
	}
	field(sealFormat)
	field(workbookID)
	field(businessDate)
	for _, c := range cells {
		field(c)
	}
	m.h.Reset()
	m.h.Write(m.buf)
	m.sum = m.h.Sum(m.sum[:0])
	return hex.EncodeToString(m.sum)
}
