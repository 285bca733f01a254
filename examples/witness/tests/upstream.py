"""An existing HTTP service the witness's Orders stand in front of: POST
/desk/Orders::place and /desk/Orders::cancel, JSON in and out, a 422 for
an order it does not know. It answers 500 to a caller hale serve did not
name (Hale-Caller), to a symbol BOOM, and a wrong shape to a symbol SHAPE.
Prints its port, then serves until killed."""
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


class Desk(BaseHTTPRequestHandler):
    next_order = 41

    def reply(self, status, value):
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.headers.get("Hale-Caller") != "alice":
            return self.reply(500, {"error": "who is calling?"})
        if self.path == "/desk/Orders::place":
            if request["symbol"] == "BOOM":
                return self.reply(500, {"error": "boom"})
            if request["symbol"] == "SHAPE":
                return self.reply(200, {"order": "forty-one"})
            order = Desk.next_order
            Desk.next_order += 1
            return self.reply(200, {"order": order, "notional": request["qty"] * request["limit"]})
        if self.path == "/desk/Orders::cancel":
            if request["order"] >= Desk.next_order:
                return self.reply(422, {"code": "unknown_order", "reason": f"no order {request['order']}"})
            return self.reply(200, {"order": request["order"], "was_open": True})
        self.reply(404, {})

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Desk)
print(server.server_address[1], flush=True)
server.serve_forever()
