package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fasthttp/websocket"
)

// Kinds of poison, in the order of poisonWeights.
const (
	poisonNUL      = iota // a send whose body holds U+0000, which PostgreSQL cannot store
	poisonOversize        // a send whose body is one byte over max_body_bytes
	poisonGarbage         // a frame that is not a valid client frame
	numPoison
)

// poisonName is the name of kind k in --poison-mix and in reports.
func poisonName(k int) string {
	switch k {
	case poisonNUL:
		return "nul"
	case poisonOversize:
		return "oversize"
	case poisonGarbage:
		return "garbage"
	}
	return "unknown"
}

// defaultPoisonMix is mostly NUL bodies: they reach the commit path, where
// one bad row can fail a batch of other users' sends. Garbage is rarer
// because a frame that is not JSON ends the connection (4400), and with it
// the client's poison until it has dialled again.
const defaultPoisonMix = "nul=8,oversize=1,garbage=1"

// poisonWeights are the cumulative weights of the poison kinds, normalised to 1.
type poisonWeights [numPoison]float64

// parsePoisonMix reads "nul=8,oversize=1,garbage=1"; kinds left out weigh 0.
func parsePoisonMix(s string) (poisonWeights, error) {
	var w poisonWeights
	var total float64
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		x, err := strconv.ParseFloat(val, 64)
		k := -1
		for i := range numPoison {
			if poisonName(i) == name {
				k = i
			}
		}
		if !ok || err != nil || x < 0 || k < 0 {
			return w, fmt.Errorf("poison-mix: bad entry %q (want kind=weight with kind one of nul, oversize, garbage)", part)
		}
		w[k] = x
		total += x
	}
	if total <= 0 {
		return w, fmt.Errorf("poison-mix %q: some kind needs a weight > 0", s)
	}
	var acc float64
	for i := range w {
		acc += w[i] / total
		w[i] = acc
	}
	return w, nil
}

// pick maps u in [0,1) to a poison kind.
func (w *poisonWeights) pick(u float64) int {
	for i, c := range w {
		if u < c {
			return i
		}
	}
	return numPoison - 1
}

// defaultMaxBody is chatd's default max_body_bytes, for a server whose
// hello does not say.
const defaultMaxBody = 4096

// poisonFrame is the i-th poison frame of kind into chat. Garbage takes
// turns over four shapes: two the server must refuse as framing (not JSON,
// not UTF-8: close 4400) and two it must answer `rejected invalid` (an
// unknown type, fields of the wrong JSON type).
func poisonFrame(kind, i int, chat, cid string, maxBody int) (msgType int, data []byte) {
	send := func(body string) []byte {
		b, _ := json.Marshal(struct {
			Type string `json:"type"`
			Chat string `json:"chat"`
			CID  string `json:"cid"`
			Body string `json:"body"`
		}{"send", chat, cid, body})
		return b
	}
	switch kind {
	case poisonNUL:
		return websocket.TextMessage, send("poison \x00 " + strconv.Itoa(i))
	case poisonOversize:
		if maxBody <= 0 {
			maxBody = defaultMaxBody
		}
		return websocket.TextMessage, send(strings.Repeat("x", maxBody+1))
	}
	switch i % 4 {
	case 0:
		return websocket.TextMessage, []byte(`{"type":"send","chat":"` + chat + `","cid":`)
	case 1:
		return websocket.BinaryMessage, []byte{0xff, 0xfe, 0x00, '{', 0xc3}
	case 2:
		return websocket.TextMessage, []byte(`{"type":"poison","cid":"` + cid + `"}`)
	default:
		return websocket.TextMessage, []byte(`{"type":"send","chat":7,"cid":"` + cid + `","body":{"x":[]}}`)
	}
}

// badShare is how many of clients pct percent are: rounded, and at least
// one when pct > 0, so a small run still has a bad client of each kind asked for.
func badShare(clients int, pct float64) int {
	if pct <= 0 || clients <= 0 {
		return 0
	}
	return max(1, int(math.Round(float64(clients)*pct/100)))
}
