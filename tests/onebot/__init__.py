"""Tests of the OneBot v11 adapter layer: addressing over the reverse WebSocket, QQ
segments and quotes as model input, the model's reply as QQ segments."""
