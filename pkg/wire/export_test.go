package wire

// DecodeClientFrameSlow is DecodeClientFrame through encoding/json alone,
// the reference the reflection-free decoder must agree with.
func DecodeClientFrameSlow(data []byte, maxFrameBytes int) (ClientFrame, error) {
	return decodeClientFrame(data, maxFrameBytes, false)
}
