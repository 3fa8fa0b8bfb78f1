"""The Flask demo app of the lab: answers with the member it runs in."""
import os
import socket

from flask import Flask

app = Flask(__name__)


@app.route("/")
def hello():
    return f"hello from {os.environ.get('MEMBER', socket.gethostname())}\n"


if __name__ == "__main__":
    app.run(host="0.0.0.0", port=int(os.environ.get("PORT", "5000")))
