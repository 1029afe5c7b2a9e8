package client

import (
	"encoding/json"
	"time"

	"github.com/chatd/chatd"
)

// inFrame is any server → client frame; Type says which fields are set.
// The `msg` frame carries the msg object's fields at top level.
type inFrame struct {
	Type string `json:"type"`

	// hello
	User   string `json:"user"`
	Device string `json:"device"`
	Limits limits `json:"limits"`

	// accepted, rejected, msg
	CID   string    `json:"cid"`
	ID    string    `json:"id"`
	Seq   int64     `json:"seq"`
	TS    time.Time `json:"ts"`
	Code  string    `json:"code"`
	Error string    `json:"error"`

	// msg, receipt
	Chat string `json:"chat"`
	From string `json:"from"`
	Body string `json:"body"`
	Upto string `json:"upto"`
}

func (f *inFrame) message() chatd.Message {
	return chatd.Message{ID: f.ID, CID: f.CID, Chat: f.Chat, From: f.From, Body: f.Body, Seq: f.Seq, TS: f.TS}
}

// limits is `hello.limits`; only the keys the client acts on are read.
type limits struct {
	Credits        int `json:"credits"`
	PingIntervalMS int `json:"ping_interval_ms"`
	IdleTimeoutMS  int `json:"idle_timeout_ms"`
	MaxFrameBytes  int `json:"max_frame_bytes"`
}

type sendFrame struct {
	Type string `json:"type"`
	Chat string `json:"chat"`
	CID  string `json:"cid"`
	Body string `json:"body"`
}

type ackFrame struct {
	Type string   `json:"type"`
	IDs  []string `json:"ids"`
}

type readFrame struct {
	Type string `json:"type"`
	Chat string `json:"chat"`
	Upto string `json:"upto"`
}

var pingFrame = json.RawMessage(`{"type":"ping"}`)
