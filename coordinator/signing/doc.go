// Package signing authenticates messages between the coordinator, the bank
// ingress and the /api callers (spec 002 §12.6, 004 ingress signature
// headers and 照会の認可):
//
//   - Canonical: the FIXED canonicalization of §12.6.2 (values at JSON
//     Pointers, stringified, joined with '|', UTF-8, NFC);
//   - RequestMessage: the bytes an HTTP request signature covers (method,
//     path, key id, nonce, signing time, the body's every leaf field);
//   - Registry: the KeyRegistry table of Ed25519 public keys (owner_type,
//     status, validity, non-retroactive revocation);
//   - Ed25519Signer / Verifier: X-ZC-Key-Id, X-ZC-Sig-Nonce, X-ZC-Sig-Time,
//     X-ZC-Signature, with a single-use nonce (idem.SigKey) and a time-skew
//     check;
//   - Rotating: a shared secret with its rotation overlap window (current,
//     plus previous until a deadline; a previous without a deadline is
//     refused), used for the HMAC-SHA256 fallback and for /api API keys,
//     compared in constant time.
//
// It imports only coordinator/store, idem, clock, domainerr and params
// (PR-SIGNATURE-SKEW), and golang.org/x/text for NFC. It must not import gateway or adapter; both
// the coordinator's bank client and the gateway's verifier import it.
package signing
