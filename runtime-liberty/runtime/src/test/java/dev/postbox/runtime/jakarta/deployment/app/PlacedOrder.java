package dev.postbox.runtime.jakarta.deployment.app;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** An order of the micro-deployment's application, written with the event that announces it. */
@Entity
@Table(name = "deployment_order")
public class PlacedOrder {

  @Id
  @Column(name = "id", length = 64)
  private String id;

  @Column(name = "amount_cents", nullable = false)
  private long amountCents;

  protected PlacedOrder() {}

  PlacedOrder(String id, long amountCents) {
    this.id = id;
    this.amountCents = amountCents;
  }

  public String id() {
    return id;
  }
}
