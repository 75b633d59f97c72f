# Build: docker build -t signoff .
# Run:   docker run -d --name signoff -p 8080:8080 -v $PWD/configs/personas:/etc/signoff/personas:ro signoff
# The API is closed (SIGNOFF_REQUIRE_TOKENS): make the first token inside the container
# (loopback, while none exists), then the agent's with it:
#   docker exec signoff signoff tokens create --name admin --scopes admin
#   docker exec -e SIGNOFF_TOKEN=<admin token> signoff signoff tokens create --name agent --scopes request,check --personas demo
# Several replicas on one Redis: give each the same SIGNOFF_TOKEN_SECRET (openssl rand -hex 32).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/signoff ./cmd/signoff

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/signoff /usr/local/bin/signoff
COPY configs/personas /etc/signoff/personas
ENV SIGNOFF_LISTEN=0.0.0.0:8080 \
    SIGNOFF_REQUIRE_TOKENS=true \
    SIGNOFF_PERSONAS=/etc/signoff/personas \
    SIGNOFF_DATA_DIR=/home/nonroot/signoff
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/signoff"]
CMD ["serve"]
