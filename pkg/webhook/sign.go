package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
)

// Sign returns the webhook-signature header value of body sent as message
// id at unix time ts: "v1," and the base64 of HMAC-SHA256(key,
// "id.ts.body"), as the Standard Webhooks specification defines it.
func Sign(key []byte, id string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, ts, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// WebhookID is the webhook-id of message msgID sent to the endpoint whose
// consumer is name: the same on every attempt, every node and a replay, so
// receivers dedupe by it.
func WebhookID(msgID, name string) string {
	return "msg_" + msgID + "_" + name[len(ConsumerPrefix):]
}
