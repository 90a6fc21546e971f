package dev.postbox.payments;

import jakarta.ws.rs.ApplicationPath;
import jakarta.ws.rs.core.Application;
import org.eclipse.microprofile.openapi.annotations.OpenAPIDefinition;
import org.eclipse.microprofile.openapi.annotations.info.Info;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/** The payments REST API at the context root: /orders, /ledger, /notifications, /admin. */
@OpenAPIDefinition(
    info =
        @Info(
            title = "Postbox payments",
            version = "0.1.0",
            description =
                "A demo shop on Postbox: POST /orders records an order and its OrderCaptured event"
                    + " in one transaction; the payments and notifications subscriptions consume"
                    + " it through the inbox. /admin is the operator's API (role postbox-admin)."
                    + " Every 4xx answer has a JSON body {\"error\": \"...\"}."),
    tags = {
      @Tag(name = "orders", description = "Place and read orders."),
      @Tag(name = "ledger", description = "What the consumers did: charges and notifications."),
      @Tag(name = "operator", description = "Outbox and inbox operations (role postbox-admin).")
    })
@ApplicationPath("/")
public class PaymentsApplication extends Application {}
