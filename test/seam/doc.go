// Package seam holds the ingress seam round trips (spec 000 test strategy,
// issue 5 item 6): for each of the 13 ZC→bank commands, the request the
// coordinator's real client (coordinator/bankclient) builds is sent as
// signed JSON over real HTTP through the gateway's signature check into the
// bank's real adapter, and the test asserts the receiver's effect — shadow
// ledger, outbox rows, the simulated core's journal and notifications —
// not just the response shape. Coverage of all 13 commands is checked
// against bankapi.Commands by machine.
package seam
