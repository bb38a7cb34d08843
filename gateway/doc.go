// Package gateway is the HTTP edge of zcgw: /api (participant and operator
// routes), /bank/{bank_id}/zc-ingress/{command} (served by each bank's
// adapter) and /internal (cron triggers, metrics). It authenticates,
// authorizes and translates HTTP into coordinator and adapter calls.
//
// It must not hold business state of its own or write coordinator tables
// directly: every state change goes through the coordinator's primitives.
package gateway
