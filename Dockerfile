# gatehost and its four built-in gates (README "Install"). The final image
# holds /usr/local/bin/gatehost and /usr/local/lib/gatehost/plugins/*.wasm,
# where a config's plugins.P.builtin finds them, and runs as a user of its
# own. No Node.js: a stdio MCP upstream needs an image of its own that adds
# it (FROM this one), or run it as a Streamable HTTP upstream (url:).
#
#   docker build -t gatehost .
#   docker run --rm -v "$PWD/examples/gateway:/etc/gatehost" gatehost \
#     plugin inspect --config /etc/gatehost/gatehost.yaml exec

FROM docker.io/library/golang:1.26-trixie AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The version gatehost version prints (make build passes git describe).
ARG VERSION=devel
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=${VERSION}" -o /out/bin/gatehost ./cmd/gatehost \
 && for g in exec merge policy preconditions static-verify; do \
      GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o /out/lib/gatehost/plugins/$g.wasm ./plugins/$g/wasm || exit 1; \
    done

FROM docker.io/library/debian:trixie-slim
RUN useradd --system --create-home --home-dir /var/lib/gatehost --uid 10001 gatehost
COPY --from=build /out/bin/gatehost /usr/local/bin/gatehost
COPY --from=build /out/lib/gatehost/plugins/ /usr/local/lib/gatehost/plugins/
USER gatehost
WORKDIR /var/lib/gatehost
ENTRYPOINT ["gatehost"]
CMD ["version"]
