// Package gateway is the HTTP edge of zcgw: /api (participant and operator
// routes), /bank/{bank_id}/zc-ingress/{command} (served by each bank's
// adapter behind signature verification), /internal (cron triggers,
// metrics, the system modes of spec 000 ch. 6) and the /healthz and
// /readyz probes. It authenticates (API keys with rotation, X-Cron-Secret,
// Ed25519/HMAC request signatures via coordinator/signing), authorizes
// queries (spec 004 照会の認可: purpose codes, operator and participant
// scopes, participant signatures, 404 for non-parties, 403 for lists),
// and translates HTTP into coordinator and adapter calls. Every response
// carries X-Request-Id; every error uses the catalog's JSON shape.
//
// Every route is one entry of routeTable (routes.go), from which both the
// mux and the OpenAPI 3.1 document served at GET /api/openapi.json are
// built; the document's schemas are generated from the Go types of the
// bodies (openapi_schema.go). docs/gateway.md says how to add a route.
//
// It must not hold business state of its own or write coordinator tables
// directly: every state change goes through the coordinator's primitives
// (orchestrator.Submit, participants.Registry, the sysmode Controller for
// mode changes and quorum reports). The tables it writes are
// AccessAuditLog, the INSERT-only record of its own authorization
// decisions (access.go), and AccessViolationWindows, the per-(bank,
// window) aggregate of participant signature violations whose first one
// goes on the GLOBAL chain; a failure to write either never fails a query.
// It reads FinalityLog for the events and verify views, and renders every
// body served to a party through Visibility (visibility.go). Identifiers
// are checked against coordinator/ident before anything else.
package gateway
