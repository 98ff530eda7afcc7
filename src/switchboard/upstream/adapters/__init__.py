"""The gateway's own provider adapters: one module per provider kind, each a pair of codecs.

An adapter maps an OpenAI-format chat request to its provider's request, and the provider's answer
(a JSON body, or stream events) back to OpenAI's format. It knows nothing of sockets or surfaces:
`relay.py` carries its requests over the relay's pooled connections.
"""
