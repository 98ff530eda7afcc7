"""Anonymous probes and discovery documents (SPEC §11)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["Health"])


@router.get("/health", operation_id="health_Health")
async def health() -> dict[str, str]:
    return {"status": "ok"}
