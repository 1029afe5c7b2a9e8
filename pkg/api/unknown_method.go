package api

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/chatd/chatd/pkg/wire"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// answerUnknownMethods puts a check before Fiber's handler: Fiber answers
// a method outside its list with a plain-text 400 of its own, past the
// error handler, so every other answer's JSON error would not hold for it.
// Such a request gets 501 (RFC 9110: a method the server does not
// recognise) with the JSON error, and is counted like any answer.
func (s *Server) answerUnknownMethods() {
	known := s.app.Config().RequestMethods
	if len(known) == 0 {
		known = fiber.DefaultMethods
	}
	body, err := json.Marshal(errorBody{
		Error: "this method is not served; use one of " + strings.Join(known, ", "),
		Code:  wire.CodeInvalid,
	})
	if err != nil {
		panic(err) // a struct of two strings always encodes
	}
	srv := s.app.Server()
	next := srv.Handler
	srv.Handler = func(ctx *fasthttp.RequestCtx) {
		if slices.Contains(known, string(ctx.Method())) {
			next(ctx)
			return
		}
		ctx.SetStatusCode(fasthttp.StatusNotImplemented)
		ctx.SetContentType(fiber.MIMEApplicationJSON)
		ctx.SetBody(body)
		s.metrics.responses.WithLabelValues(strconv.Itoa(fasthttp.StatusNotImplemented)).Inc()
	}
}
